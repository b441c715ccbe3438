# One image for every ICV service. TypeScript runs directly through tsx (no build step), so the
# image keeps the dev dependencies: `npm ci --omit=dev` would drop tsx.
#
#   docker build -t icv:0.1.0 .
#   docker run --rm -p 3000:3000 -v icv-data:/data icv:0.1.0          # all services in one process
#   docker run --rm icv:0.1.0 node --import tsx services/proof/src/main.ts   # one service (see deploy/k8s)
#
# The container's PID 1 is node itself (`node --import tsx`), so SIGTERM reaches the service and
# its graceful shutdown runs. `npm start` or `npx tsx` would put npm and a shell in front of it,
# which do not pass SIGTERM on.

# --- the sources, without local state --------------------------------------------------------
# The repository has no .dockerignore, so the whole checkout arrives here; only what the image
# needs goes on, and a developer's data dirs (PGlite files, generated secrets) never do.
FROM node:20-slim AS source
WORKDIR /src
COPY . .
RUN set -eu; \
    mkdir -p /out /manifests; \
    cp -a package.json package-lock.json tsconfig.json packages services scripts /out/; \
    rm -rf /out/packages/*/node_modules /out/services/*/node_modules \
           /out/packages/*/data /out/services/*/data /out/services/*/test /out/packages/*/test; \
    cd /out; \
    cp --parents package.json package-lock.json packages/*/package.json services/*/package.json /manifests/

# --- the image ---------------------------------------------------------------------------------
FROM node:20-slim
WORKDIR /app

# dependencies first (cached while package*.json stay the same); dev dependencies included: tsx
COPY --from=source /manifests/ ./
RUN npm install --no-audit --no-fund && npm cache clean --force

COPY --from=source /out/ ./

# runtime: the unprivileged `node` user of the base image; /app stays root-owned (read-only for
# the service); the embedded default keeps its PGlite files and generated secrets in /data
RUN mkdir -p /data && chown node:node /data
USER node
ENV NODE_ENV=production \
    DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 3000

CMD ["node", "--import", "tsx", "scripts/start-all.ts"]
