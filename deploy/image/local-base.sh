#!/usr/bin/env bash
# Assembles, without any container registry, the base image both Dockerfiles build on where
# docker.io is out of reach (CI here): Debian bookworm (debootstrap's minbase, from the Debian
# mirror) with this machine's Node 20 and npm copied in where node:20-bookworm-slim has them
# (/usr/local). Debian, not a bare copy of node: the daemon's Dockerfile installs nmap, lldpd and
# iproute2 with apt-get, unchanged, on the same base; the server's runtime needs /bin/sh (compose's
# entrypoint) and glibc. Takes ~30 s; an image already present is kept (--force rebuilds it).
#
#   deploy/image/local-base.sh [--force] [IMAGE]      # default localhost/surveyor-base:node20
#
# Needs root, buildah and debootstrap (Debian packages); DEBIAN_MIRROR overrides the mirror.
set -euo pipefail

force=false
if [ "${1:-}" = --force ]; then force=true; shift; fi
image="${1:-localhost/surveyor-base:node20}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

fail() { echo "local-base: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "run as root (buildah mount and debootstrap need it)"
for tool in buildah debootstrap node npm; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool is missing (apt-get install buildah debootstrap; Node 20 with npm)"
done
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" = 20 ] || fail "this machine's node is $(node -v); the image is for Node 20"

if ! $force && buildah inspect --type image "$image" >/dev/null 2>&1; then
  echo "local-base: $image is present (--force rebuilds it)"
  exit 0
fi

ctr="$(buildah from scratch)"
root="$(buildah mount "$ctr")"
cleanup() { buildah umount "$ctr" >/dev/null 2>&1 || true; buildah rm "$ctr" >/dev/null 2>&1 || true; }
trap cleanup EXIT

echo "local-base: debootstrap bookworm (minbase) from $mirror"
debootstrap --variant=minbase bookworm "$root" "$mirror" >/tmp/local-base.debootstrap.log 2>&1 ||
  { tail -n 20 /tmp/local-base.debootstrap.log >&2; fail "debootstrap failed (log: /tmp/local-base.debootstrap.log)"; }

# Node and npm as the official node images place them. The host's node is a glibc build; copy any
# shared library it links that minbase lacks (ldd), so it runs inside.
node_bin="$(readlink -f "$(command -v node)")"
npm_dir="$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")" # …/node_modules/npm
[ -f "$npm_dir/bin/npm-cli.js" ] || fail "npm's folder not found (looked in $npm_dir)"
install -D -m 0755 "$node_bin" "$root/usr/local/bin/node"
ldd "$node_bin" | awk '/=> \//{print $3} /^\s*\/lib/{print $1}' | while read -r lib; do
  [ -e "$root$lib" ] || { mkdir -p "$root$(dirname "$lib")"; cp -L "$lib" "$root$lib"; }
done
mkdir -p "$root/usr/local/lib/node_modules"
cp -a "$npm_dir" "$root/usr/local/lib/node_modules/npm"
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"

# What minbase leaves that an image does not need.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/var/log/* "$root"/debootstrap
env -u NODE_EXTRA_CA_CERTS chroot "$root" /usr/local/bin/node -e 'process.exit(0)' || fail "node does not run inside the assembled base"

buildah config \
  --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env NODE_VERSION="$(node -p process.versions.node)" \
  --cmd node \
  --label org.opencontainers.image.description="Debian bookworm minbase with Node $(node -v), assembled by deploy/image/local-base.sh" \
  "$ctr"
buildah umount "$ctr" >/dev/null
buildah commit --quiet --rm "$ctr" "$image" >/dev/null
trap - EXIT
echo "local-base: committed $image (node $(node -v), npm $(npm -v))"
