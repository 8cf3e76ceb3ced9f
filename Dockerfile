# Surveyor: the web process, the worker and the CLI in one image, with the built web console.
#
#   buildah bud --format docker --build-arg SERVICE_VERSION=1.2.3 -t surveyor:1.2.3 .
#   docker build --build-arg SERVICE_VERSION=1.2.3 -t surveyor:1.2.3 .
#   docker run -p 8080:8080 -v surveyor-data:/var/lib/surveyor surveyor:1.2.3          # embedded database
#   docker run -e DATABASE_URL=… -e SERVICE_SECRET_KEY=… surveyor:1.2.3 worker         # or: serve, admin …
#
# `--format docker` with buildah: the OCI image format has no HEALTHCHECK; buildah would drop it.
#
# Build arguments:
#   BASE_IMAGE       the runtime's base: Node 20 on glibc with /bin/sh (the compose file's entrypoint
#                    is a shell). Where no public registry is reachable, deploy/image/local-base.sh
#                    assembles one locally (localhost/surveyor-base:node20; CI builds on it).
#   BUILD_IMAGE      the build stage's base (default: BASE_IMAGE); it also needs npm.
#   SERVICE_VERSION  what /api/health reports as `version` (spec 4.7): the release built.
#
# Nothing secret goes into the image: SERVICE_SECRET_KEY and DATABASE_URL come from the environment
# at run time (compose secrets, a Kubernetes Secret); .dockerignore keeps deploy/secrets, .env files
# and local data folders out of the build context. On the embedded database without a key, the
# service generates one into the data folder (the volume), never into the image.

ARG BASE_IMAGE=docker.io/library/node:20-bookworm-slim
ARG BUILD_IMAGE=${BASE_IMAGE}

# ---- build: every dependency, tsc for contract/server/daemon, the Vite build of the console ----
FROM ${BUILD_IMAGE} AS build
WORKDIR /src
ENV CI=true
# Behind a TLS-inspecting proxy, the CA bundle npm must trust: mount it for the build and name it here
# (buildah bud --volume /etc/ssl/certs/ca-certificates.crt:/run/host-ca.crt:ro --build-arg
# NODE_EXTRA_CA_CERTS=/run/host-ca.crt). A build argument of this stage only: not in the image.
ARG NODE_EXTRA_CA_CERTS=
# The whole context at once: `npm ci` runs the root `prepare` script (= `npm run build`), which needs
# the sources. No downloaded browser: playwright-core (a dev dependency) never downloads one.
# Then: check the build produced the server and the console; keep only production dependencies for
# the runtime stage (the console is built, so React and Vite stay here); make the embedded database's
# folder, copied with its owner below (the runtime stage needs no shell and no useradd).
COPY . .
RUN npm ci --prefer-offline --no-audit --no-fund \
 && test -f packages/server/dist/cli/bin.js \
 && test -f packages/web/dist/index.html \
 && npm prune --omit=dev --no-audit --no-fund \
 && mkdir -p /out/data

# ---- runtime: Node, the production dependencies, the compiled server and the console's assets ----
FROM ${BASE_IMAGE}
ARG SERVICE_VERSION=0.1.0-dev
LABEL org.opencontainers.image.title="Surveyor" \
      org.opencontainers.image.description="Surveyor control plane: web process, worker, CLI and web console" \
      org.opencontainers.image.version="${SERVICE_VERSION}"
WORKDIR /app
# Owned by root and read-only for the service's user: it writes only to its data folder (and /tmp).
COPY --from=build /src/package.json /src/package-lock.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/packages/contract/package.json ./packages/contract/package.json
COPY --from=build /src/packages/contract/dist ./packages/contract/dist
COPY --from=build /src/packages/server/package.json ./packages/server/package.json
COPY --from=build /src/packages/server/bin ./packages/server/bin
COPY --from=build /src/packages/server/dist ./packages/server/dist
COPY --from=build /src/packages/server/migrations ./packages/server/migrations
COPY --from=build /src/packages/web/package.json ./packages/web/package.json
COPY --from=build /src/packages/web/dist ./packages/web/dist
COPY --from=build --chown=10001:10001 /out/data /var/lib/surveyor

# A numeric user, so a minimal base without useradd works and Kubernetes' runAsNonRoot can verify it
# (deploy/kubernetes runs it as 10001:10001 too).
USER 10001:10001
ENV NODE_ENV=production \
    SERVICE_HOST=0.0.0.0 \
    SERVICE_PORT=8080 \
    SERVICE_DATA_DIR=/var/lib/surveyor \
    SERVICE_VERSION=${SERVICE_VERSION}
# The embedded database (PGlite) and its generated secret key, when DATABASE_URL is not set.
VOLUME ["/var/lib/surveyor"]
EXPOSE 8080

# /api/health answers 503 when the database does not; node's fetch, so no curl in the image. The
# same command as deploy/compose.yaml's. A worker (`worker`) listens on no port: disable it there
# (compose: healthcheck.disable; Kubernetes ignores HEALTHCHECK and uses its probes).
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.SERVICE_PORT || 8080) + '/api/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# SIGTERM drains (docs/operating.md): no new job ticks, in-flight requests finish (up to 10 s), SSE
# streams are told `event: closing`; node is PID 1 (exec form), so it receives the signal itself.
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "packages/server/bin/surveyor.js"]
CMD ["serve"]
