// A crash between a proof's issuance and its transparency-log entry, as real processes: `npm
// start`'s command on a Postgres of the test's own, a proof issued, the process killed (SIGKILL,
// nothing runs after it) before the log had the entry, started again on the same database and
// data dir: the entry is there, once, and its inclusion proof is served.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, havePostgresBinaries, privatePostgres, type PrivatePostgres } from "../support/private-servers.ts";
import { api } from "../support/stack.ts";

const ROOT = path.resolve(import.meta.dirname, "..", "..");
let server: PrivatePostgres | undefined;
const dir = mkdtempSync(path.join(tmpdir(), "icv-log-crash-"));
const children: ChildProcess[] = [];

beforeAll(async () => {
  if (havePostgresBinaries) server = await privatePostgres();
}, 60_000);
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  server?.close();
  rmSync(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function start(env: Record<string, string>) {
  const { DATABASE_URL: _d, REDIS_URL: _r, WORKERS: _w, ...inherited } = process.env;
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/start-all.ts"], {
    cwd: ROOT,
    env: { ...inherited, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  const out = { text: "" };
  child.stdout!.on("data", (b: Buffer) => (out.text += b.toString()));
  child.stderr!.on("data", (b: Buffer) => (out.text += b.toString()));
  return { child, out, exited: new Promise<void>((resolve) => child.on("exit", () => resolve())) };
}

async function until<T>(probe: () => Promise<T | undefined | false>, ms: number, why: () => string): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out: ${why()}`);
    await sleep(100);
  }
}

describe.skipIf(!havePostgresBinaries)("a crash between issuance and the log entry (skipped: no postgres binaries)", () => {
  it("logs the proof once after the restart", async () => {
    const port = await freePort();
    const env: Record<string, string> = {
      DATA_DIR: dir,
      DATABASE_URL: server!.url,
      HOST: "127.0.0.1",
      GRPC_HOST: "127.0.0.1",
      PORT: String(port),
      ADMIN_PORT: String(await freePort()),
      BOOTSTRAP_DEV_TENANT: "true",
      RATE_LIMIT_PER_MINUTE: "100000",
      LOG_LEVEL: "info",
    };
    for (const n of ["VERIFICATION", "PROOF", "SESSION", "DOMAIN", "WEBHOOK", "LOG"]) env[`${n}_GRPC_PORT`] = String(await freePort());
    const base = `http://127.0.0.1:${port}`;
    const first = start(env);
    const key = await until(
      async () => /test key (pk_test_\S+)/.exec(first.out.text)?.[1],
      90_000,
      () => first.out.text.slice(-3000),
    );
    const c = api(base, key);
    const db = new pg.Client({ connectionString: server!.url });
    await db.connect();
    try {
      // the sequencer's lease row locked by the test: the log can queue the event but not log it,
      // so the kill below falls between the issuance and the entry whatever the timing
      await db.query("BEGIN");
      await db.query("SELECT 1 FROM log.lease FOR UPDATE");
      const v = await c.post("/api/v1/verifications", { type: "domain", channel: "dns", identifier: "crash.example.com" });
      expect(v.status).toBe(201);
      expect((await c.post(`/api/v1/verifications/${v.body.id}/test-verify`)).status).toBe(200);
      await sleep(1_500); // the event reaches the log's queue, the sequencer waits on the lock
      first.child.kill("SIGKILL");
      await first.exited;
      await db.query("ROLLBACK");

      const count = async () => (await db.query(`SELECT count(*)::int AS n FROM log.entries WHERE proof_id = $1`, [v.body.id])).rows[0].n as number;
      expect(await count(), "killed before the entry was made").toBe(0);

      const second = start(env);
      await until(
        async () => (await c.get("/health")).body?.status === "healthy",
        90_000,
        () => second.out.text.slice(-3000),
      );
      const inc = await until(
        async () => {
          const r = await c.get(`/api/v1/proofs/${v.body.id}/inclusion?kind=issued`);
          return r.status === 200 && r.body;
        },
        30_000,
        () => second.out.text.slice(-3000),
      );
      expect(JSON.parse(Buffer.from(inc.entry, "base64").toString())).toMatchObject({ kind: "issued", proof_id: v.body.id, subject: "crash.example.com" });
      await sleep(2_500); // a second sequencing round: nothing more for it
      expect(await count()).toBe(1);
      second.child.kill("SIGTERM");
      await second.exited;
    } finally {
      await db.end();
    }
  }, 240_000);
});
