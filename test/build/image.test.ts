// The image itself, where a container engine runs and the base images can be had: it builds,
// weighs at most 250 MB, and the all-in-one in it answers /health (scripts/docker-build.sh).
// Elsewhere it skips and says why (the Dockerfile's promises are still checked by
// dockerfile.test.ts, and the app layer's size by dist.test.ts).
import { execFileSync, spawnSync } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "..", "..");
const BASES = ["node:24.21.0-bookworm-slim", "gcr.io/distroless/nodejs24-debian12:nonroot"];
const TAG = "icv:image-test";

function whyNot(): string | undefined {
  const ok = (args: string[], timeout = 20_000) => spawnSync("docker", args, { stdio: "ignore", timeout }).status === 0;
  if (spawnSync("docker", ["--version"], { stdio: "ignore" }).error) return "no docker CLI";
  if (!ok(["info"])) return "no container engine answers `docker info`";
  for (const base of BASES) {
    if (ok(["image", "inspect", base])) continue;
    if (!ok(["pull", base], 120_000)) return `base image ${base} cannot be pulled (no registry reachable)`;
  }
  return undefined;
}
const reason = whyNot();

describe.skipIf(reason !== undefined)(`the container image (skipped: ${reason})`, () => {
  it("builds, is at most 250 MB, and answers /health", () => {
    const out = execFileSync(path.join(ROOT, "scripts/docker-build.sh"), [TAG], { cwd: ROOT, encoding: "utf8", timeout: 1_500_000 });
    expect(out).toContain(`docker-build: ${TAG} is up`);
    const bytes = Number(execFileSync("docker", ["image", "inspect", "--format", "{{.Size}}", TAG], { encoding: "utf8" }).trim());
    expect(bytes / 1e6).toBeLessThanOrEqual(250);
  }, 1_600_000);
});
