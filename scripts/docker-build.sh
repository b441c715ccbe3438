#!/usr/bin/env bash
# Builds the image when a container engine answers; otherwise says why it skipped (exit 0).
#   scripts/docker-build.sh [tag]          NODE_DIGEST=@sha256:… RUNTIME_DIGEST=@sha256:… pin the base images
set -euo pipefail
cd "$(dirname "$0")/.."
tag="${1:-icv:dev}"
if ! command -v docker >/dev/null 2>&1; then
  echo "docker-build: skipped, no docker CLI on this machine (the image is not built here)"
  exit 0
fi
if ! docker info >/dev/null 2>&1; then
  echo "docker-build: skipped, \`docker info\` fails (no container engine running; the image is not built here)"
  exit 0
fi
docker build --build-arg "NODE_DIGEST=${NODE_DIGEST:-}" --build-arg "RUNTIME_DIGEST=${RUNTIME_DIGEST:-}" -t "$tag" .
docker image ls "$tag"
# the compiled all-in-one starts in the image and answers /health
id=$(docker run -d --rm -p 127.0.0.1::3000 "$tag")
trap 'docker stop "$id" >/dev/null' EXIT
port=$(docker port "$id" 3000/tcp | head -n1 | sed 's/.*://')
for _ in $(seq 1 60); do
  if curl -fsS "http://127.0.0.1:$port/health"; then echo; echo "docker-build: $tag is up"; exit 0; fi
  sleep 1
done
docker logs "$id"
echo "docker-build: $tag did not answer /health" >&2
exit 1
