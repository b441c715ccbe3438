# syntax=docker/dockerfile:1
# One image for every ICV service: TypeScript compiled to JavaScript (`npm run build`), production
# dependencies only, installed exactly as the lockfile says, run by the unprivileged `node` user
# under tini. docs/operations.md "Image" describes it.
#
#   docker build -t icv:0.1.0 .
#   docker run --rm -p 3000:3000 -v icv-data:/data icv:0.1.0                    # all services in one process
#   docker run --rm icv:0.1.0 node services/proof/src/main.js                    # one service (deploy/k8s)
#
# Base images: the build stages run on the official Debian image of the exact Node release; the
# image itself on Google's distroless Node 24 (glibc, OpenSSL, Node: no shell, no npm, no apt;
# about 150 MB against about 220 MB for node:24-bookworm-slim), which keeps the image under
# 250 MB. No registry is reachable where this file was written, so the digests are build
# arguments the release pipeline fills (docs/operations.md "Image"):
#   docker buildx imagetools inspect node:24.21.0-bookworm-slim --format '{{json .Manifest.Digest}}'
#   docker buildx imagetools inspect gcr.io/distroless/nodejs24-debian12:nonroot --format '{{json .Manifest.Digest}}'
#   docker build --build-arg NODE_DIGEST=@sha256:<…> --build-arg RUNTIME_DIGEST=@sha256:<…> -t icv:0.1.0 .
ARG NODE_VERSION=24.21.0
ARG NODE_DIGEST=""
ARG RUNTIME_DIGEST=""

# --- the package manifests alone, so the dependency layer stays cached while they do not change --
FROM node:${NODE_VERSION}-bookworm-slim${NODE_DIGEST} AS manifests
WORKDIR /src
COPY . .
RUN mkdir /out && cp --parents package.json package-lock.json packages/*/package.json services/*/package.json /out/

# --- build: type check, compile, then the production dependencies of the compiled app ----------
FROM node:${NODE_VERSION}-bookworm-slim${NODE_DIGEST} AS build
WORKDIR /src
COPY --from=manifests /out/ ./
# all dependencies (TypeScript, tsx, types) for the build; `npm ci` refuses the full lockfile here
# (it lacks other platforms' optional @bufbuild/buf binaries, docs/operations.md "Known issues"),
# so this stage uses `npm install`, which keeps the locked versions; nothing of it reaches the image
RUN --mount=type=cache,target=/root/.npm npm install --no-audit --no-fund
COPY . .
# dist/: the compiled app with its production package.json and production lockfile
RUN npm run typecheck && npm run build
WORKDIR /src/dist
# lockfile-exact, production only; then what nothing loads at run time goes (type declarations,
# TypeScript sources, the dependencies' source maps and docs, unused module-format copies)
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --no-audit --no-fund \
 && node --import tsx /src/scripts/prune-modules.ts /src/dist
# tini (static: PID 1 in the image), `node` on PATH, and the data dir for the runtime stage
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini=0.19.0-1+b3 \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /rootfs/usr/bin /rootfs/data && chown 65532:65532 /rootfs/data \
 && cp /usr/bin/tini-static /rootfs/usr/bin/tini \
 && ln -s /nodejs/bin/node /rootfs/usr/bin/node

# --- the image ---------------------------------------------------------------------------------
FROM gcr.io/distroless/nodejs24-debian12:nonroot${RUNTIME_DIGEST}
# tini as PID 1 (passes SIGTERM on to node for the graceful shutdown, reaps zombies); /usr/bin/node
COPY --from=build /rootfs/usr/bin/ /usr/bin/
WORKDIR /app
# /app stays root-owned (read-only for the service); PGlite files and generated secrets go to /data
COPY --from=build /src/dist/ ./
COPY --from=build --chown=65532:65532 /rootfs/data /data
# distroless "nonroot": uid 65532
USER 65532:65532
ENV NODE_ENV=production \
    NODE_OPTIONS="--enable-source-maps --max-semi-space-size=32" \
    DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 3000
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "scripts/start-all.js"]
