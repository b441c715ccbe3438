# syntax=docker/dockerfile:1
# One image for every ICV service: TypeScript compiled to JavaScript (`npm run build`), production
# dependencies only, installed exactly as the lockfile says, run by the unprivileged `node` user
# under tini. docs/operations.md "Image" describes it.
#
#   docker build -t icv:0.1.0 .
#   docker run --rm -p 3000:3000 -v icv-data:/data icv:0.1.0                    # all services in one process
#   docker run --rm icv:0.1.0 node services/proof/src/main.js                    # one service (deploy/k8s)
#
# Base image: the exact Node release, and in release builds its digest too. No registry is
# reachable where this file was written, so the digest is a build argument the release pipeline
# fills (docs/operations.md "Image"):
#   docker buildx imagetools inspect node:24.21.0-bookworm-slim --format '{{json .Manifest.Digest}}'
#   docker build --build-arg NODE_DIGEST=@sha256:<that digest> -t icv:0.1.0 .
ARG NODE_VERSION=24.21.0
ARG NODE_DIGEST=""

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
# lockfile-exact, production only
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --no-audit --no-fund

# --- the image ---------------------------------------------------------------------------------
FROM node:${NODE_VERSION}-bookworm-slim${NODE_DIGEST}
# tini as PID 1: passes SIGTERM on to node (graceful shutdown) and reaps zombies
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini=0.19.0-1+b3 \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# /app stays root-owned (read-only for the service); PGlite files and generated secrets go to /data
COPY --from=build /src/dist/ ./
RUN mkdir -p /data && chown node:node /data
USER node
ENV NODE_ENV=production \
    NODE_OPTIONS=--enable-source-maps \
    DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 3000
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "scripts/start-all.js"]
