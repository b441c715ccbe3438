// `npm run monitor` as a domain owner runs it: started before a proof for its domain is issued,
// it finds the proof and later its revocation over the public endpoints only, checking every
// checkpoint; its state file lets it go on without printing anything twice, and a state that
// disagrees with the log (a fork, as the monitor sees it) stops it with exit code 1.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";
import { waitFor } from "../support/expect-error.ts";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const stack = useStack();
const t = useTenant(stack, "Monitored");
let dir: string;
const children: ChildProcess[] = [];

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), "icv-monitor-"));
});
afterAll(() => {
  for (const c of children) c.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

function monitor(extra: string[]) {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "scripts/monitor.ts", "--url", stack.url, "--env", "test", "--state", path.join(dir, "state.json"), "--interval", "200", ...extra],
    { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] },
  );
  children.push(child);
  const out = { stdout: "", stderr: "", code: undefined as number | null | undefined };
  child.stdout!.on("data", (d) => (out.stdout += d));
  child.stderr!.on("data", (d) => (out.stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve((out.code = code))));
  return { child, out, exited };
}

async function domainProof(domain: string) {
  const c = api(stack.url, t.testKey);
  const v = await c.post("/api/v1/verifications", { type: "domain", channel: "dns", identifier: domain });
  expect(v.status).toBe(201);
  expect((await c.post(`/api/v1/verifications/${v.body.id}/test-verify`)).status).toBe(200);
  return v.body.id as string;
}

describe("npm run monitor", () => {
  it("finds a proof for its domain issued after it started, then its revocation, and nothing for other subjects", async () => {
    const before = await domainProof("watched.example.com");
    await new Promise((r) => setTimeout(r, 1_500)); // logged before the monitor starts
    const m = monitor(["--subject", "Watched.Example.com", "--since", new Date().toISOString()]);
    expect(await waitFor(async () => /checkpoint \d+ verified/.test(m.out.stderr), 20_000, 50), m.out.stderr).toBe(true);

    const id = await domainProof("watched.example.com");
    const noise = await domainProof("other.example.com");
    expect(await waitFor(async () => m.out.stdout.includes(`issued ${id} domain/dns`), 15_000, 50), m.out.stderr).toBe(true);
    expect((await api(stack.url, t.testKey).post(`/api/v1/proofs/${id}/revoke`, { reason: "asset_transferred" })).status).toBe(200);
    expect(await waitFor(async () => m.out.stdout.includes(`revoked ${id} domain/dns`), 15_000, 50), m.out.stderr).toBe(true);
    expect(m.out.stdout).not.toContain(noise);
    expect(m.out.stdout).not.toContain(before); // logged before --since
    m.child.kill("SIGTERM");
    await m.exited;

    // the state file: the pinned key and the last checkpoint; a restart prints nothing it printed before
    const state = JSON.parse(readFileSync(path.join(dir, "state.json"), "utf8"));
    expect(state).toMatchObject({ env: "test", size: expect.any(Number), vkey: expect.stringContaining("/log/test+") });
    const again = monitor(["--subject", "watched.example.com", "--once"]);
    expect(await again.exited, again.out.stderr).toBe(0);
    expect(again.out.stdout).toBe("");
  });

  it("stops with exit code 1 when the log does not extend the checkpoint it saw last (a fork)", async () => {
    const file = path.join(dir, "state.json");
    const state = JSON.parse(readFileSync(file, "utf8"));
    await domainProof("fork.example.com");
    await new Promise((r) => setTimeout(r, 1_500));
    writeFileSync(file, JSON.stringify({ ...state, root: Buffer.alloc(32, 7).toString("base64") }));
    const m = monitor(["--subject", "watched.example.com", "--once"]);
    expect(await m.exited).toBe(1);
    expect(m.out.stderr).toMatch(/not consistent|fork/);
  });
});
