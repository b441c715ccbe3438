// What the Dockerfile promises where no container engine runs to build it (scripts/docker-build.sh
// builds it where one does): the build context without local state, and a runtime stage that runs
// compiled JavaScript as a non-root user under tini.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "..", "..");
const ignore = readFileSync(path.join(ROOT, ".dockerignore"), "utf8")
  .split("\n")
  .map((l) => l.trim());
const dockerfile = readFileSync(path.join(ROOT, "Dockerfile"), "utf8");
const runtime = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));

describe("the image definition", () => {
  it("keeps data dirs (PGlite files, generated secrets), node_modules, builds, .env files and .git out of the context", () => {
    for (const p of ["**/data", "**/node_modules", "**/dist", "**/.env", ".git"]) expect(ignore, p).toContain(p);
  });

  it("builds on the exact Node 24 release and runs on distroless Node 24, each with a digest argument", () => {
    expect(dockerfile).toMatch(/^ARG NODE_VERSION=24\.\d+\.\d+$/m);
    expect(dockerfile).toMatch(/^ARG NODE_DIGEST=""$/m);
    expect(dockerfile).toMatch(/^ARG RUNTIME_DIGEST=""$/m);
    const froms = dockerfile.match(/^FROM .*$/gm) ?? [];
    for (const from of froms.slice(0, -1)) expect(from).toMatch(/^FROM node:\$\{NODE_VERSION\}-bookworm-slim\$\{NODE_DIGEST\} AS /);
    expect(froms.at(-1)).toBe("FROM gcr.io/distroless/nodejs24-debian12:nonroot${RUNTIME_DIGEST}");
  });

  it("runs the compiled all-in-one as a non-root user under tini, without tsx, npm or a shell", () => {
    expect(runtime).toMatch(/^USER 65532:65532$/m);
    expect(runtime).not.toMatch(/^RUN /m); // distroless: no shell to run anything with
    expect(runtime).toContain("COPY --from=build /rootfs/usr/bin/ /usr/bin/");
    expect(runtime).toContain('ENTRYPOINT ["/usr/bin/tini", "--"]');
    expect(runtime).toContain('CMD ["node", "scripts/start-all.js"]');
    expect(runtime).not.toContain("tsx");
    expect(runtime).toContain("COPY --from=build /src/dist/ ./");
  });
});
