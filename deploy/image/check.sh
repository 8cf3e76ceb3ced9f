#!/usr/bin/env bash
# Builds the two images (Dockerfile, packages/daemon/Dockerfile) with buildah and checks them:
#   server: starts the image's entrypoint and command on the embedded database, waits until the
#     image's own HEALTHCHECK command passes inside it, asserts /api/health reports the build
#     argument's version and that the process runs as the image's non-root user, stops it with
#     the image's STOPSIGNAL and expects exit 0;
#   daemon: nmap, lldpd, lldpcli and ip run inside it; its entrypoint prints its help and version.
# Everything it makes (containers, images) is removed at the end, whatever happens.
#
#   deploy/image/check.sh                        # as root; CI runs it (.ci/run)
#   BASE_IMAGE=docker.io/library/node:20-bookworm-slim deploy/image/check.sh   # with a registry
#   KEEP_IMAGES=1 deploy/image/check.sh          # keep localhost/surveyor-check{,-daemon}:VERSION
#
# BASE_IMAGE: used when present or pullable; otherwise deploy/image/local-base.sh assembles
# localhost/surveyor-base:node20 (Debian minbase + this machine's Node 20; no registry needed).
#
# How it runs the image here: `podman run` does not work on this kind of machine (crun may not set
# RLIMIT_NPROC; cgroups in hybrid mode), so the image's contents run with `buildah run --isolation
# chroot` on the host's network, with the image's working directory, user and environment, and the
# entrypoint, command, health check and stop signal read from the image's config. npm ci inside the
# build reaches the npm registry through the host's network and reuses the host's npm cache.
set -euo pipefail
cd "$(dirname "$0")/../.."
started=$SECONDS

say() { printf '== image check: %s\n' "$*"; }
fail() { printf '\nIMAGE CHECK FAILED: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "run as root (buildah with chroot isolation)"
for tool in buildah node ss git; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool is missing (apt-get install buildah; CI installs it)"
done

version="0.0.0-ci.$(git rev-parse --short HEAD 2>/dev/null || echo local)"
server_image="localhost/surveyor-check:$version"
daemon_image="localhost/surveyor-check-daemon:$version"
local_base=localhost/surveyor-base:node20
base="${BASE_IMAGE:-$local_base}"
npm_cache="$(npm config get cache 2>/dev/null || echo "$HOME/.npm")"
mkdir -p "$npm_cache"
work="$(mktemp -d /tmp/surveyor-image-check.XXXXXX)"
containers=()
server_pid=""

cleanup() {
  local rc=$?
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then kill -KILL "$server_pid" 2>/dev/null || true; fi
  for c in "${containers[@]}"; do buildah rm "$c" >/dev/null 2>&1 || true; done
  if [ "${KEEP_IMAGES:-}" != 1 ]; then buildah rmi "$server_image" "$daemon_image" >/dev/null 2>&1 || true; fi
  if [ $rc -ne 0 ] && [ -s "$work/server.log" ]; then echo "--- the server's output (last 40 lines):" >&2; tail -n 40 "$work/server.log" >&2; fi
  rm -rf "$work"
}
trap cleanup EXIT

# A value of the image's config (Docker format): node reads the JSON, no jq needed.
config() { # IMAGE EXPRESSION-over-c
  buildah inspect --type image "$1" | node -e '
    let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
      const c = JSON.parse(s).Docker.config ?? {};
      const v = (new Function("c", "return " + process.argv[1]))(c);
      process.stdout.write(typeof v === "string" ? v : JSON.stringify(v ?? null));
    });' "$2"
}
# `buildah run` in the way this machine allows, with the container's configured user, workdir, env.
run_in() { buildah run --isolation chroot --network host "$@"; }

# ---- the base ----
if buildah inspect --type image "$base" >/dev/null 2>&1; then
  say "base $base (present)"
elif [ "$base" != "$local_base" ] && timeout 120 buildah pull --quiet "$base" >/dev/null 2>&1; then
  say "base $base (pulled)"
else
  [ "$base" = "$local_base" ] || say "base $base is neither present nor pullable: assembling $local_base"
  base="$local_base"
  deploy/image/local-base.sh "$base" || fail "could not assemble the base image (deploy/image/local-base.sh)"
fi

# ---- build ----
# The host's npm cache (npm ci --prefer-offline in the Dockerfiles then reads it, no download). A
# host that trusts an extra CA for the registry (a TLS-inspecting proxy: NODE_EXTRA_CA_CERTS) lends
# it to the build stage only, through a mount and a build argument: nothing of it lands in an image.
ca_args=()
if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f "$NODE_EXTRA_CA_CERTS" ]; then
  ca_args=(--volume "$NODE_EXTRA_CA_CERTS:/run/host-ca.crt:ro" --build-arg NODE_EXTRA_CA_CERTS=/run/host-ca.crt)
fi
build() { # DOCKERFILE IMAGE
  buildah bud --isolation chroot --network host --format docker --quiet \
    --build-arg BASE_IMAGE="$base" --build-arg SERVICE_VERSION="$version" \
    --volume "$npm_cache:/root/.npm" "${ca_args[@]}" \
    -f "$1" -t "$2" . >"$work/build.log" 2>&1 || { tail -n 60 "$work/build.log" >&2; fail "buildah bud -f $1 failed (the build's last lines above)"; }
}
t=$SECONDS
say "building $server_image from Dockerfile (SERVICE_VERSION=$version)"
build Dockerfile "$server_image"
say "built in $((SECONDS - t)) s: $(buildah images --format '{{.Size}}' "$server_image")"

# ---- the image's config ----
user="$(config "$server_image" c.User)"
entrypoint="$(config "$server_image" c.Entrypoint)"
cmd="$(config "$server_image" c.Cmd)"
health="$(config "$server_image" c.Healthcheck?.Test)"
stopsignal="$(config "$server_image" c.StopSignal)"
[ "$(config "$server_image" 'c.Env.includes("SERVICE_VERSION='"$version"'")')" = true ] || fail "the image's env has no SERVICE_VERSION=$version"
[ "$(config "$server_image" 'c.Env.includes("SERVICE_HOST=0.0.0.0")')" = true ] || fail "the image's env has no SERVICE_HOST=0.0.0.0"
[ -n "$user" ] && [ "${user%%:*}" != 0 ] && [ "${user%%:*}" != root ] || fail "the image's user is '$user': expected a non-root numeric user"
[ "$health" != null ] || fail "the image has no HEALTHCHECK (built without --format docker?)"
[ "$stopsignal" = SIGTERM ] || fail "the image's STOPSIGNAL is '$stopsignal', expected SIGTERM"
say "user $user, entrypoint $entrypoint, cmd $cmd, stop signal $stopsignal"
mapfile -t argv < <(node -e 'for (const a of [...JSON.parse(process.argv[1]), ...JSON.parse(process.argv[2])]) console.log(a)' "$entrypoint" "$cmd")
mapfile -t hc < <(node -e '
  const t = JSON.parse(process.argv[1]);
  const argv = t[0] === "CMD-SHELL" ? ["/bin/sh", "-c", t[1]] : t[0] === "CMD" ? t.slice(1) : [];
  for (const a of argv) console.log(a);' "$health")
[ ${#hc[@]} -gt 0 ] || fail "cannot read the HEALTHCHECK command: $health"

# ---- start the server ----
port="$(node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')"
ctr="$(buildah from --quiet --pull=false --name "surveyor-check-$$" "$server_image")"
containers+=("$ctr")
buildah config --env SERVICE_PORT="$port" --env SERVICE_LOG_LEVEL=warn "$ctr"
run_in "$ctr" -- node -e 'require("node:fs").accessSync(process.env.SERVICE_DATA_DIR, require("node:fs").constants.W_OK)' ||
  fail "the image's data folder (SERVICE_DATA_DIR) is not writable by its user $user"
# The embedded database in a fresh temporary folder, as a volume would be, owned by the image's user.
data="$work/data"
mkdir -p "$data" && chown "$user" "$data"
say "starting: ${argv[*]} (port $port, SERVICE_DATA_DIR on $data)"
t=$SECONDS
run_in --volume "$data:/var/lib/surveyor" "$ctr" -- "${argv[@]}" >"$work/server.log" 2>&1 &
runner=$!

# ---- wait for the image's health check ----
healthy=false
for _ in $(seq 1 90); do
  kill -0 "$runner" 2>/dev/null || { wait "$runner" && rc=0 || rc=$?; fail "the server exited ($rc) before its health check passed"; }
  if run_in "$ctr" -- "${hc[@]}" >/dev/null 2>&1; then healthy=true; break; fi
  sleep 1
done
$healthy || fail "the image's HEALTHCHECK did not pass within 90 s"
say "healthy after $((SECONDS - t)) s (the image's HEALTHCHECK, run inside the container)"

body="$(node -e 'fetch(process.argv[1]).then(async (r) => { process.stdout.write(await r.text()); process.exit(r.ok ? 0 : 1); }, (e) => { console.error(e.message); process.exit(1); })' "http://127.0.0.1:$port/api/health")" ||
  fail "GET /api/health did not answer 200: $body"
reported="$(node -p 'JSON.parse(process.argv[1]).version' "$body")"
[ "$reported" = "$version" ] || fail "/api/health reports version '$reported', expected the build argument's '$version' ($body)"
say "/api/health: $body"
console="$(node -e 'fetch(process.argv[1]).then(async (r) => { process.stdout.write(String(r.status) + " " + (await r.text()).includes("<div id=")); })' "http://127.0.0.1:$port/")"
[ "$console" = "200 true" ] || fail "GET / does not serve the console's index.html (got: $console)"

server_pid="$(ss -Hltnp "sport = :$port" | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2)"
[ -n "$server_pid" ] || fail "no process listens on port $port"
uid="$(awk '/^Uid:/{print $2}' "/proc/$server_pid/status")"
[ "$uid" = "${user%%:*}" ] || fail "the server runs as uid $uid, expected the image's user ${user%%:*}"
say "the server (pid $server_pid) runs as uid $uid"

# ---- stop it as a runtime would: the image's STOPSIGNAL to its process ----
kill -s "${stopsignal#SIG}" "$server_pid"
stopped=false
for _ in $(seq 1 450); do kill -0 "$runner" 2>/dev/null || { stopped=true; break; }; sleep 0.1; done
$stopped || fail "the server did not exit within 45 s of $stopsignal"
wait "$runner" && rc=0 || rc=$?
server_pid=""
[ $rc = 0 ] || fail "the server exited $rc after $stopsignal, expected 0"
[ -s "$data/secret.key" ] || fail "the embedded database's folder holds no generated secret.key: was SERVICE_DATA_DIR used?"
say "stopped by $stopsignal, exit 0"

# ---- the daemon's image ----
t=$SECONDS
say "building $daemon_image from packages/daemon/Dockerfile"
build packages/daemon/Dockerfile "$daemon_image"
say "built in $((SECONDS - t)) s: $(buildah images --format '{{.Size}}' "$daemon_image")"
dctr="$(buildah from --quiet --pull=false --name "surveyor-check-daemon-$$" "$daemon_image")"
containers+=("$dctr")
out="$(run_in "$dctr" -- nmap --version 2>&1)" || fail "nmap does not run in the daemon image: $out"
say "$(printf '%s\n' "$out" | sed -n 1p)"
out="$(run_in "$dctr" -- lldpd -v 2>&1)" || fail "lldpd does not run in the daemon image: $out"
say "lldpd $(printf '%s\n' "$out" | sed -n 1p)"
out="$(run_in "$dctr" -- lldpcli -v 2>&1)" || fail "lldpcli does not run in the daemon image: $out"
out="$(run_in "$dctr" -- ip -V 2>&1)" || fail "ip (iproute2) does not run in the daemon image: $out"
mapfile -t dargv < <(node -e 'for (const a of JSON.parse(process.argv[1])) console.log(a)' "$(config "$daemon_image" c.Entrypoint)")
out="$(run_in "$dctr" -- "${dargv[@]}" --help 2>&1)" || fail "the daemon's entrypoint --help failed: $out"
printf '%s\n' "$out" | grep -q '^Usage: surveyor-daemon' || fail "the daemon's entrypoint --help printed no usage: $out"
out="$(run_in "$dctr" -- "${dargv[@]}" --version 2>&1)" || fail "the daemon's entrypoint --version failed: $out"
printf '%s\n' "$out" | grep -Eq '^surveyor-daemon [0-9]' || fail "the daemon's entrypoint --version printed: $out"
say "daemon entrypoint: $out"

say "passed in $((SECONDS - started)) s"
