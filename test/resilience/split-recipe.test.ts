// docs/operations.md "Running one service alone": its local multi-process recipe, the shell block
// taken from the Markdown and run as written by bash (its settings given as a reader would export
// them first: a Postgres of this test's own, free ports, a temp data dir), must bring up seven
// processes that work together: /health healthy, a tenant made by the admin CLI, a verification
// whose webhook is delivered by the webhook process. A split that cannot work refuses to start with
// one line naming what to set: a process with a CA of its own, a service alone on the embedded
// database, a service following events from a database it was not given. An internal team's
// client (INTERNAL_CLIENTS_FILE, a certificate from the admin CLI) calls the verification process
// directly over gRPC, and is granted one more RPC by a SIGHUP to that process.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type DescMessage, type DescMethodUnary } from "@bufbuild/protobuf";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { VerificationService } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import { grpcCredentials, targetName } from "../../packages/platform/test/support/tls.ts";
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
const clientsFile = path.join(dir, "internal-clients.yaml");
const grantBilling = (...methods: string[]) =>
  writeFileSync(
    clientsFile,
    `clients:\n  - name: billing\n    allow:\n${methods.map((m) => `      - icv.verification.v1.VerificationService/${m}\n`).join("")}`,
  );
/** What the webhook test made: the tenant and its verification, for the internal client to read. */
let made: { tenantId: string; verificationId: string } | undefined;

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
    INTERNAL_CLIENTS_FILE: clientsFile,
  });
  grantBilling("ExportVerifications");
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
    made = { tenantId: tenant.tenant_id, verificationId: v.body.id };
  });

  it("an internal team's client calls the verification process directly, and a SIGHUP to it grants one more RPC", async () => {
    expect(made).toBeDefined();
    const out = path.join(dir, "billing-certs");
    execFileSync(
      path.join(ROOT, "node_modules/.bin/node"),
      ["--import", "tsx", "scripts/admin.ts", "internal-client", "cert", "--name", "billing", "--out", out],
      {
        cwd: ROOT,
        env,
        stdio: "ignore",
      },
    );
    const file = (f: string) => readFileSync(path.join(out, f), "utf8");
    const creds = grpcCredentials(file("ca.crt"), { cert: file("billing.crt"), key: file("billing.key") });
    const client = new grpc.Client(`127.0.0.1:${env.VERIFICATION_GRPC_PORT}`, creds, targetName("verification"));
    const call = <I extends DescMessage, O extends DescMessage>(m: DescMethodUnary<I, O>, input: unknown) =>
      new Promise<{ code: grpc.status; body?: any }>((resolve) =>
        client.makeUnaryRequest(
          `/${m.parent.typeName}/${m.name}`,
          (x: unknown) => Buffer.from(toBinary(m.input, x as never)),
          (b: Buffer) => fromBinary(m.output, b),
          create(m.input, input as never) as unknown,
          new grpc.Metadata(),
          { deadline: Date.now() + 10_000 },
          (err, res) => resolve(err ? { code: err.code } : { code: grpc.status.OK, body: res }),
        ),
      );
    try {
      const scope = { tenantId: made!.tenantId, environment: Environment.TEST };
      const exported = await call(VerificationService.method.exportVerifications, { scope });
      expect(exported.code, logs()).toBe(grpc.status.OK);
      expect(exported.body.verifications.map((v: { id: string; status: string }) => [v.id, v.status])).toEqual([[made!.verificationId, "verified"]]);
      const get = () => call(VerificationService.method.getVerification, { scope, id: made!.verificationId });
      expect((await get()).code).toBe(grpc.status.PERMISSION_DENIED);
      grantBilling("ExportVerifications", "GetVerification");
      process.kill(Number(readFileSync(path.join(dataDir, "verification.pid"), "utf8")), "SIGHUP");
      const end = Date.now() + 15_000;
      while ((await get()).code !== grpc.status.OK && Date.now() < end) await new Promise((r) => setTimeout(r, 200));
      expect((await get()).body?.verification.id).toBe(made!.verificationId);
      expect(readFileSync(path.join(dataDir, "verification.log"), "utf8")).toMatch(
        /"caller":"billing","rpc":"icv.verification.v1.VerificationService\/GetVerification"/,
      );
    } finally {
      client.close();
    }
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
      // the recipe's data key: its delivery bodies are sealed with it (a key of its own would be refused first)
      DATA_ENCRYPTION_KEY: readFileSync(path.join(dataDir, "secrets", "data-key"), "utf8").trim(),
      WEBHOOK_GRPC_PORT: String(await freePort()),
      METRICS_PORT: String(await freePort()),
    });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/DATABASE_URL is not set: webhook, started alone, follows the events of verification.*VERIFICATION_DATABASE_URL/);
  });
});
