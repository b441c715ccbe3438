// docs/operations.md "Running one service alone": its local multi-process recipe, the shell block
// taken from the Markdown and run as written by bash (its settings given as a reader would export
// them first: a Postgres of this test's own, free ports, a temp data dir), must bring up seven
// processes that work together: /health healthy, a tenant made by the admin CLI, a verification
// whose webhook is delivered by the webhook process. A split that cannot work refuses to start with
// one line naming what to set: a process with a CA of its own, a service alone on the embedded
// database, a service following events from a database it was not given.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { shellBlocks, shellEnv } from "../support/doc-blocks.ts";
import { freePort, freePorts, havePostgresBinaries, privatePostgres, type PrivatePostgres } from "../support/private-servers.ts";
import { startReceiver, type Receiver } from "../support/receiver.ts";
import { api } from "../support/stack.ts";

const ROOT = path.resolve(import.meta.dirname, "..", "..");
const recipe = shellBlocks("docs/operations.md").find((b) => b.heading === "Running one service alone" && b.code.includes("for svc in"));
const dir = mkdtempSync(path.join(tmpdir(), "icv-split-recipe-"));
const dataDir = path.join(dir, "data");
let server: PrivatePostgres | undefined;
let rx: Receiver | undefined;
let env: Record<string, string> = {};
let base = "";
let printed = "";

const pids = () =>
  (existsSync(dataDir) ? readdirSync(dataDir).filter((f) => f.endsWith(".pid")) : []).map((f) => Number(readFileSync(path.join(dataDir, f), "utf8")));
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const logs = () =>
  existsSync(dataDir)
    ? readdirSync(dataDir)
        .filter((f) => f.endsWith(".log"))
        .map((f) => `--- ${f}\n${readFileSync(path.join(dataDir, f), "utf8").slice(-3000)}`)
        .join("\n")
    : "";

/** Runs `entry` alone with `extra` on top of the recipe's settings; its exit code and stderr (or null if it kept running 60 s). */
function runAlone(entry: string, extra: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(path.join(ROOT, "node_modules/.bin/node"), ["--import", "tsx", entry], {
    cwd: ROOT,
    env: { ...env, ...extra },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (b: Buffer) => (stderr += b));
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

beforeAll(async () => {
  if (!havePostgresBinaries || !recipe) return;
  server = await privatePostgres();
  const port = await freePort();
  const metrics = await freePorts(7);
  const grpc: Record<string, string> = {};
  for (const n of ["VERIFICATION", "PROOF", "SESSION", "DOMAIN", "WEBHOOK", "LOG"]) grpc[`${n}_GRPC_PORT`] = String(await freePort());
  env = shellEnv({
    ...grpc,
    DATABASE_URL: server.url,
    DATA_DIR: dataDir,
    PORT: String(port),
    ADMIN_PORT: String(await freePort()),
    METRICS_PORT: String(metrics[0]),
    // the webhook below goes to a receiver on loopback
    ALLOW_PRIVATE_TARGETS: "true",
    LOG_LEVEL: "info",
  });
  base = `http://127.0.0.1:${port}`;
  try {
    printed = execFileSync("bash", ["-eu", "-o", "pipefail", "-c", recipe.code], {
      cwd: ROOT,
      env,
      encoding: "utf8",
      timeout: 200_000,
      stdio: ["ignore", "pipe", "pipe"],
    });
  } catch (e) {
    throw new Error(`the recipe of ${recipe.where} failed: ${(e as Error).message}\n${logs()}`);
  }
}, 240_000);

afterAll(async () => {
  // the recipe's own way to stop: SIGTERM to the processes it recorded
  const started = pids();
  if (started.length) execFileSync("bash", ["-c", 'kill $(cat "$DATA_DIR"/*.pid)'], { env, stdio: "ignore" });
  const end = Date.now() + 30_000;
  while (started.some(alive) && Date.now() < end) await new Promise((r) => setTimeout(r, 200));
  for (const pid of started.filter(alive)) process.kill(pid, "SIGKILL");
  await rx?.close();
  server?.close();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe.skipIf(!havePostgresBinaries)("the split recipe of docs/operations.md, run as written (skipped: no postgres binaries)", () => {
  it("is in the guide", () => {
    expect(recipe?.code).toContain("TLS_DIR");
    expect(recipe?.code).toMatch(/_URL=https:\/\//);
  });

  it("starts seven processes that work together: healthy, a tenant from the admin CLI, a webhook delivered across processes", async () => {
    expect(pids()).toHaveLength(7);
    const health = await api(base).get("/health");
    expect(health.body, logs()).toMatchObject({
      status: "healthy",
      services: { database: "up", verification: "up", proof: "up", session: "up", domain: "up", webhook: "up" },
    });
    // the admin CLI's answer, printed by the recipe's last line
    const tenant = JSON.parse(printed) as { tenant_id: string; test_key: string };
    expect(tenant.test_key).toMatch(/^pk_test_/);
    // on Postgres no development tenant was made, so no key was printed by any process
    expect(logs()).not.toMatch(/pk_(test|live)_[A-Za-z0-9]{20}/);

    rx = await startReceiver(200);
    const token = readFileSync(path.join(dataDir, "secrets", "admin-token"), "utf8").trim();
    const set = await fetch(`http://127.0.0.1:${env.ADMIN_PORT}/icv.gateway.v1.AdminService/SetWebhookEndpoint`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ tenantId: tenant.tenant_id, environment: "ENVIRONMENT_TEST", url: rx.url }),
    });
    expect(set.status).toBe(200);
    const c = api(base, tenant.test_key);
    const v = await c.post("/api/v1/verifications", { type: "email", channel: "email", identifier: "split@example.com" });
    expect(v.status).toBe(201);
    expect((await c.post(`/api/v1/verifications/${v.body.id}/test-verify`)).body.status).toBe("verified");
    // written by the verification process, delivered by the webhook process
    const [hook] = await rx.waitFor(1, 30_000);
    expect(JSON.parse(hook.body)).toMatchObject({ event: "verification.completed", verification_id: v.body.id });
  });

  it("refuses a gateway whose certificates come from a CA of its own, naming TLS_DIR", async () => {
    const own = mkdtempSync(path.join(dir, "own-"));
    const r = await runAlone("services/gateway/src/main.ts", {
      DATA_DIR: own,
      TLS_DIR: path.join(own, "tls"),
      PORT: String(await freePort()),
      ADMIN_PORT: String(await freePort()),
      METRICS_PORT: String(await freePort()),
    });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/invalid configuration: \w+_URL \(https:\/\/127\.0\.0\.1:\d+\) cannot be called: its certificate is not of this process's CA/);
    expect(r.stderr).toContain(`the same TLS_DIR (here ${path.join(own, "tls")})`);
  });

  it("refuses a service alone on the embedded database, naming DATABASE_URL", async () => {
    const own = mkdtempSync(path.join(dir, "embedded-"));
    const r = await runAlone("services/proof/src/main.ts", {
      DATABASE_URL: "",
      DATA_DIR: own,
      PROOF_GRPC_PORT: String(await freePort()),
      METRICS_PORT: String(await freePort()),
    });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(
      /^invalid configuration: DATABASE_URL is not set: proof, started alone, would keep its events in an embedded database of its own/m,
    );
  });

  it("refuses a webhook service given its own database but not the one whose events it follows", async () => {
    const r = await runAlone("services/webhook/src/main.ts", {
      DATABASE_URL: "",
      WEBHOOK_DATABASE_URL: server!.url,
      DATA_DIR: mkdtempSync(path.join(dir, "follow-")),
      WEBHOOK_GRPC_PORT: String(await freePort()),
      METRICS_PORT: String(await freePort()),
    });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/DATABASE_URL is not set: webhook, started alone, follows the events of verification.*VERIFICATION_DATABASE_URL/);
  });
});
