// A service process started before its Postgres, as the kubelet sees it on the plain health port
// (grpc.health.v1, what the chart's gRPC probes ask): liveness SERVING from the first moment,
// readiness NOT_SERVING while it waits with backoff; once Postgres is there the same process
// (no restart) turns ready; a later outage turns readiness off again and liveness stays on. The
// gateway, probed over HTTP, answers /api/v1 while it waits and /health 503 until its app serves.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus as Status } from "@icv/contracts/gen/grpc/health/v1/health_pb.ts";
import { freePort, havePostgresBinaries, privatePostgres, type PrivatePostgres } from "../support/private-servers.ts";

const ROOT = path.resolve(import.meta.dirname, "..", "..");
let server: PrivatePostgres | undefined;
const dir = mkdtempSync(path.join(tmpdir(), "icv-ready-"));
const children: ChildProcess[] = [];

beforeAll(async () => {
  if (havePostgresBinaries) server = await privatePostgres();
});
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  server?.close();
  rmSync(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Asks the health port what a gRPC probe asks (service "" is readiness, "liveness" liveness); undefined while nothing answers. */
async function probe(port: number, service: string): Promise<Status | undefined> {
  const client = createClient(Health, createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` }));
  try {
    return (await client.check({ service }, { timeoutMs: 1_000 })).status;
  } catch {
    return undefined;
  }
}

async function until(what: () => Promise<boolean>, ms: number, why: string) {
  const end = Date.now() + ms;
  while (!(await what())) {
    if (Date.now() > end) throw new Error(`timed out: ${why}`);
    await sleep(100);
  }
}

describe.skipIf(!havePostgresBinaries)("readiness while starting (skipped: no postgres binaries)", () => {
  it("a service waiting for Postgres is live and not ready, then ready without a restart", async () => {
    server!.stop();
    const healthPort = await freePort();
    const { DATABASE_URL: _d, REDIS_URL: _r, ...inherited } = process.env;
    const child = spawn(process.execPath, ["--import", "tsx", "services/proof/src/main.ts"], {
      cwd: ROOT,
      env: {
        ...inherited,
        DATABASE_URL: server!.url,
        DATA_DIR: dir,
        PROOF_GRPC_PORT: String(await freePort()),
        PROOF_HEALTH_PORT: String(healthPort),
        METRICS_PORT: String(await freePort()),
        RETRY_BACKOFF_MAX_MS: "300",
        LOG_LEVEL: "info",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(child);
    let out = "";
    child.stdout!.on("data", (b: Buffer) => (out += b.toString()));
    child.stderr!.on("data", (b: Buffer) => (out += b.toString()));

    await until(async () => (await probe(healthPort, "liveness")) === Status.SERVING, 60_000, `liveness while waiting:\n${out}`);
    expect(out).toContain("database not reachable yet");
    // waiting: not ready, whichever name the probe asks, for as long as Postgres is away
    for (let i = 0; i < 3; i++) {
      expect(await probe(healthPort, "")).toBe(Status.NOT_SERVING);
      expect(await probe(healthPort, "icv.proof.v1.ProofService")).toBe(Status.NOT_SERVING);
      expect(await probe(healthPort, "liveness")).toBe(Status.SERVING);
      await sleep(300);
    }
    expect(child.exitCode).toBeNull();

    server!.start();
    await until(async () => (await probe(healthPort, "")) === Status.SERVING, 60_000, `ready after Postgres started:\n${out}`);
    expect(await probe(healthPort, "icv.proof.v1.ProofService")).toBe(Status.SERVING);
    expect(child.exitCode).toBeNull(); // the same process: no restart
    expect(out).toContain("service listening");

    // an outage later: out of the Service, not restarted
    server!.stop();
    await until(async () => (await probe(healthPort, "")) === Status.NOT_SERVING, 10_000, "not ready during an outage");
    expect(await probe(healthPort, "liveness")).toBe(Status.SERVING);
    server!.start();
    await until(async () => (await probe(healthPort, "")) === Status.SERVING, 30_000, "ready again");

    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(await probe(healthPort, "liveness")).toBeUndefined();
  }, 150_000);

  it("the gateway waiting for Postgres answers /api/v1 (live), /health 503 (not ready) and 503 with Retry-After elsewhere, then serves without a restart", async () => {
    server!.stop();
    const port = await freePort();
    const { DATABASE_URL: _d, REDIS_URL: _r, ...inherited } = process.env;
    const child = spawn(process.execPath, ["--import", "tsx", "services/gateway/src/main.ts"], {
      cwd: ROOT,
      env: {
        ...inherited,
        DATABASE_URL: server!.url,
        DATA_DIR: dir,
        PORT: String(port),
        ADMIN_PORT: String(await freePort()),
        METRICS_PORT: String(await freePort()),
        BOOTSTRAP_DEV_TENANT: "false",
        RETRY_BACKOFF_MAX_MS: "300",
        LOG_LEVEL: "info",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(child);
    let out = "";
    child.stdout!.on("data", (b: Buffer) => (out += b.toString()));
    child.stderr!.on("data", (b: Buffer) => (out += b.toString()));
    const get = (p: string) => fetch(`http://127.0.0.1:${port}${p}`).catch(() => undefined);

    await until(async () => (await get("/api/v1"))?.status === 200, 60_000, `/api/v1 while waiting:\n${out}`);
    await until(async () => out.includes("database not reachable yet"), 30_000, `the wait is logged:\n${out}`);
    const health = (await get("/health"))!;
    expect(health.status).toBe(503);
    expect(((await health.json()) as { status: string }).status).toBe("unhealthy");
    const api = (await get("/api/v1/verifications"))!;
    expect(api.status).toBe(503);
    expect(api.headers.get("retry-after")).toBe("1");
    expect(((await api.json()) as { error: { code: string } }).error.code).toBe("service_unavailable");
    expect(child.exitCode).toBeNull();

    server!.start();
    await until(async () => out.includes("gateway listening"), 60_000, `serving after Postgres started:\n${out}`);
    // the app answers now: its own /health sees the database (the services are not running here)
    const after = (await (await get("/health"))!.json()) as { services: Record<string, string> };
    expect(after.services.database).toBe("up");
    expect((await get("/api/v1/verifications"))!.status).toBe(401);
    expect(child.exitCode).toBeNull();

    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  }, 150_000);
});
