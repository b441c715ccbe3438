// `npm start` with WORKERS=2 on real Postgres, as real processes: both workers serve (each new
// connection goes to the next worker), an SSE stream on one worker sees the change made through
// the other, a cached GET of a settled verification follows a change made elsewhere, the metrics
// on the admin listener add up both workers, the development tenant is made once, a killed worker
// (the background one) is restarted while the other keeps answering and events flow again, a
// revoked proof of either format shows in the status list every worker serves within 5 s, and
// SIGTERM stops everything (exit 0, no process left); a worker that cannot start (its port taken)
// stops the whole start (exit 1). Embedded PGlite is one process: WORKERS=2
// without a Postgres is refused, which runs in both columns.
import { spawn, type ChildProcess } from "node:child_process";
import http from "node:http";
import { mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { getListFromStatusListJWT } from "@sd-jwt/jwt-status-list";
import { afterAll, describe, expect, it } from "vitest";
import { freshPostgres, type FreshPostgres } from "../support/fresh-postgres.ts";
import { freePort } from "../support/private-servers.ts";

const ROOT = path.resolve(import.meta.dirname, "..", "..");
const children: ChildProcess[] = [];
const dirs: string[] = [];
const dbs: FreshPostgres[] = [];
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  for (const db of dbs) await db.drop();
});
/** A database of its own (each start has its own data dir, so its own keys). */
const database = async () => {
  const db = await freshPostgres(process.env.DATABASE_URL!);
  dbs.push(db);
  return db.url;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(what: () => boolean | Promise<boolean>, ms: number, why: () => string) {
  const end = Date.now() + ms;
  while (!(await what())) {
    if (Date.now() > end) throw new Error(`timed out: ${why()}`);
    await sleep(100);
  }
}

/** `npm start`'s command in its own process, its output collected. */
function start(env: Record<string, string>) {
  const { DATABASE_URL: _d, REDIS_URL: _r, WORKERS: _w, ...inherited } = process.env;
  const dir = mkdtempSync(path.join(tmpdir(), "icv-workers-"));
  dirs.push(dir);
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/start-all.ts"], {
    cwd: ROOT,
    env: { ...inherited, DATA_DIR: dir, HOST: "127.0.0.1", GRPC_HOST: "127.0.0.1", SHUTDOWN_TIMEOUT_MS: "3000", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  const out = { text: "" };
  child.stdout!.on("data", (b: Buffer) => (out.text += b.toString()));
  child.stderr!.on("data", (b: Buffer) => (out.text += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, out, exited };
}

/** One request on a connection of its own (so the primary hands it to the next worker). */
function request(port: number, method: string, p: string, key?: string, body?: unknown): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      {
        host: "127.0.0.1",
        port,
        method,
        path: p,
        agent: false,
        headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(data ? { "content-type": "application/json" } : {}) },
      },
      (res) => {
        let text = "";
        res.on("data", (b: Buffer) => (text += b.toString()));
        res.on("end", () => resolve({ status: res.statusCode!, body: text.startsWith("{") ? JSON.parse(text) : text }));
      },
    );
    req.on("error", reject);
    req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${p}: no answer within 10 s`)));
    req.end(data);
  });
}

/** An SSE stream on a connection of its own: the data lines as they arrive, and the connection's local port. */
function stream(port: number, p: string, key: string) {
  const s = { events: [] as string[], localPort: 0, close: () => req.destroy() };
  const req = http.get({ host: "127.0.0.1", port, path: p, agent: false, headers: { authorization: `Bearer ${key}`, accept: "text/event-stream" } }, (res) => {
    s.localPort = res.socket.localPort!;
    res.on("data", (b: Buffer) => {
      for (const line of b.toString().split("\n")) if (line.startsWith("data: ")) s.events.push(line.slice(6));
    });
    res.on("error", () => {});
  });
  req.on("error", () => {});
  return s;
}

/** Which of `pids` holds the server end of the loopback connection from clientPort to serverPort (/proc/net/tcp and the processes' fds). */
function holderOf(serverPort: number, clientPort: number, pids: number[]): number | undefined {
  const hex = (n: number) => `:${n.toString(16).toUpperCase().padStart(4, "0")}`;
  let inode: string | undefined;
  for (const f of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of readFileSync(f, "utf8").split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length > 9 && cols[1].endsWith(hex(serverPort)) && cols[2].endsWith(hex(clientPort))) inode = cols[9];
    }
  }
  if (!inode) return undefined;
  return pids.find((pid) =>
    readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`) === `socket:[${inode}]`;
      } catch {
        return false;
      }
    }),
  );
}

/** The workers (children of the primary) and their slots, from /proc. */
function workers(primary: number): Map<number, number> {
  const found = new Map<number, number>();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) !== primary) continue;
      const slot = /(?:^|\0)ICV_WORKER_SLOT=(\d+)/.exec(readFileSync(`/proc/${d}/environ`, "utf8"))?.[1];
      if (slot) found.set(Number(slot), Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The `worker` of the debug "request" log lines of a route (which workers answered it). */
const servedBy = (out: string, route: string) =>
  new Set(
    out
      .split("\n")
      .filter((l) => l.includes('"msg":"request"') && l.includes(`"path":"${route}"`))
      .map((l) => (JSON.parse(l) as { worker: number }).worker),
  );

describe("WORKERS in embedded mode", () => {
  it("WORKERS=2 without a Postgres is refused with one line naming the variable (PGlite is single-process)", async () => {
    const s = start({ WORKERS: "2", PORT: String(await freePort()), ADMIN_PORT: String(await freePort()) });
    expect(await s.exited).toBe(1);
    expect(s.out.text.trim()).toBe(
      "invalid configuration: WORKERS above 1 needs DATABASE_URL (or every <SERVICE>_DATABASE_URL): the embedded PGlite is single-process",
    );
  }, 60_000);
});

describe.skipIf(!process.env.DATABASE_URL)("npm start with WORKERS=2 on Postgres (skipped: needs DATABASE_URL; embedded mode runs one process)", () => {
  it("both workers serve, events and caches cross workers, a killed worker comes back, SIGTERM ends everything", async () => {
    const [port, adminPort] = [await freePort(), await freePort()];
    const grpc: Record<string, string> = {};
    for (const s of ["VERIFICATION", "PROOF", "SESSION", "DOMAIN", "WEBHOOK", "LOG"]) grpc[`${s}_GRPC_PORT`] = String(await freePort());
    const s = start({
      DATABASE_URL: await database(),
      WORKERS: "2",
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      ...grpc,
      LOG_LEVEL: "debug",
      BOOTSTRAP_DEV_TENANT: "true",
      EVENT_POLL_INTERVAL_MS: "200",
      RATE_LIMIT_PER_MINUTE: "100000",
    });
    const log = () => s.out.text.slice(-4000);
    const up = () => s.out.text.split("\n").filter((l) => l.includes('"msg":"ICV is up"')).length;
    await until(
      () => up() >= 2,
      90_000,
      () => `both workers up:\n${log()}`,
    );
    const primary = s.child.pid!;
    const first = workers(primary);
    expect([...first.keys()].sort()).toEqual([1, 2]);

    // the development tenant: made and shown once, by one worker
    expect(s.out.text.match(/A development tenant was created/g)).toHaveLength(1);
    const key = /test key (pk_test_\S+)/.exec(s.out.text)![1];

    // a verification, streams on it from both workers, test-verify through one of them
    const created = await request(port, "POST", "/api/v1/verifications", key, {
      type: "phone",
      channel: "sms",
      identifier: "+37069100001",
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const streams = [1, 2, 3, 4].map(() => stream(port, `/api/v1/verifications/${id}/events`, key));
    await until(
      () => streams.every((x) => x.events.length >= 1),
      10_000,
      () => `streams connected: ${JSON.stringify(streams.map((x) => x.events))}`,
    );
    // which worker holds each stream, and which one answers the test-verify (its request log line)
    const slotOf = new Map([...first].map(([slot, pid]) => [pid, slot]));
    const holders = streams.map((x) => slotOf.get(holderOf(port, x.localPort, [...first.values()])!));
    expect(new Set(holders)).toEqual(new Set([1, 2]));
    const verified = await request(port, "POST", `/api/v1/verifications/${id}/test-verify`, key);
    expect(verified.status).toBe(200);
    await until(
      () => servedBy(s.out.text, "/api/v1/verifications/:id/test-verify").size === 1,
      5_000,
      () => "the test-verify's request line",
    );
    const through = [...servedBy(s.out.text, "/api/v1/verifications/:id/test-verify")][0];
    // every stream sees the change, those on the other worker included
    expect(holders.filter((h) => h !== through).length).toBeGreaterThan(0);
    await until(
      () => streams.every((x) => x.events.some((e) => e.includes('"status":"verified"'))),
      10_000,
      () => `every stream saw verified: ${JSON.stringify(streams.map((x) => x.events))}`,
    );
    for (const x of streams) x.close();

    // the settled verification read on both workers (now in their caches), revoked through one
    for (let i = 0; i < 6; i++) expect((await request(port, "GET", `/api/v1/verifications/${id}`, key)).body.status).toBe("verified");
    expect(servedBy(s.out.text, "/api/v1/verifications/:id")).toEqual(new Set([1, 2]));
    const revoked = await request(port, "POST", `/api/v1/proofs/${id}/revoke`, key, { reason: "fraud" });
    expect(revoked.status).toBe(200);
    // every worker answers revoked once the event is through (10 in a row), and never verified after that
    let inRow = 0;
    await until(
      async () => {
        const status = (await request(port, "GET", `/api/v1/verifications/${id}`, key)).body.status;
        inRow = status === "revoked" ? inRow + 1 : 0;
        return inRow >= 10;
      },
      15_000,
      () => `revoked on every worker:\n${log()}`,
    );
    for (let i = 0; i < 6; i++) expect((await request(port, "GET", `/api/v1/verifications/${id}`, key)).body.status).toBe("revoked");

    // the admin listener's metrics add up both workers: every GET above is counted
    const metrics = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
    const gets = metrics
      .split("\n")
      .filter((l) => l.startsWith("icv_http_requests_total{") && l.includes('method="GET"') && l.includes('route="/api/v1/verifications/:id"'))
      .reduce((n, l) => n + Number(l.split(" ").at(-1)), 0);
    expect(gets).toBeGreaterThanOrEqual(16);

    // Token Status Lists (issue 26): a proof of either format revoked through one worker shows as
    // revoked (1) in the list every worker serves within 5 s, although each had the list cached
    const listEntry = (token: string) => {
      const { idx, uri } = (JSON.parse(Buffer.from(token.split(".")[1], "base64url").toString()) as { status: { status_list: { idx: number; uri: string } } })
        .status.status_list;
      return { idx, path: new URL(uri).pathname };
    };
    const listValue = async (entry: { idx: number; path: string }) =>
      getListFromStatusListJWT((await request(port, "GET", entry.path)).body as string).getStatus(entry.idx);
    for (const [i, format] of ["jwt", "sd-jwt-vc"].entries()) {
      const v = await request(port, "POST", "/api/v1/verifications", key, {
        type: "phone",
        channel: "sms",
        identifier: `+3706910010${i}`,
        proof_format: format,
      });
      const done = await request(port, "POST", `/api/v1/verifications/${v.body.id}/test-verify`, key);
      expect(done.body.proof_sd_jwt_vc !== undefined).toBe(format === "sd-jwt-vc");
      const entry = listEntry(done.body.proof_token);
      for (let n = 0; n < 4; n++) expect(await listValue(entry)).toBe(0); // both workers have it cached now
      expect((await request(port, "POST", `/api/v1/proofs/${v.body.id}/revoke`, key, { reason: "fraud" })).status).toBe(200);
      const revokedAt = Date.now();
      let row = 0;
      await until(
        async () => {
          row = (await listValue(entry)) === 1 ? row + 1 : 0;
          return row >= 6;
        },
        5_000,
        () => `${format}: the list shows the revocation on every worker within 5 s:\n${log()}`,
      );
      expect(Date.now() - revokedAt).toBeLessThan(5_000);
    }
    expect(servedBy(s.out.text, "/api/v1/proofs/status-lists/:list_id")).toEqual(new Set([1, 2]));

    // the background worker killed: once the primary saw it end (a connection handed to it before
    // that is lost, as with any crash), the other answers everything while it starts it again
    process.kill(first.get(1)!, "SIGKILL");
    await until(
      () => s.out.text.includes('"msg":"worker ended; restarting it"'),
      10_000,
      () => `the primary saw the worker end:\n${log()}`,
    );
    const during: number[] = [];
    for (let i = 0; i < 10; i++) during.push((await request(port, "GET", `/api/v1/verifications/${id}`, key)).status);
    expect(during.every((x) => x === 200)).toBe(true);
    await until(
      () => up() >= 3 && workers(primary).size === 2,
      60_000,
      () => `worker 1 restarted:\n${log()}`,
    );
    const second = workers(primary);
    expect(second.get(1)).not.toBe(first.get(1));
    expect(second.get(2)).toBe(first.get(2));
    // its background work runs again: a new verification's change reaches a stream
    const again = await request(port, "POST", "/api/v1/verifications", key, {
      type: "phone",
      channel: "sms",
      identifier: "+37069100002",
    });
    const seen = [1, 2].map(() => stream(port, `/api/v1/verifications/${again.body.id}/events`, key));
    await until(
      () => seen.every((x) => x.events.length >= 1),
      10_000,
      () => "streams connected after the restart",
    );
    expect((await request(port, "POST", `/api/v1/verifications/${again.body.id}/test-verify`, key)).status).toBe(200);
    await until(
      () => seen.every((x) => x.events.some((e) => e.includes('"status":"verified"'))),
      15_000,
      () => `events after the restart: ${JSON.stringify(seen.map((x) => x.events))}`,
    );
    for (const x of seen) x.close();

    // SIGTERM: every worker stops gracefully, the primary exits 0, nothing is left
    s.child.kill("SIGTERM");
    expect(await s.exited).toBe(0);
    for (const pid of second.values()) expect(alive(pid)).toBe(false);
    expect(s.out.text).toContain('"msg":"all workers stopped"');
  }, 240_000);

  it("a worker that cannot start (its port is taken) stops the start: exit 1, nothing left", async () => {
    const taken = http.createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => taken.listen(port, "127.0.0.1", resolve));
    try {
      const grpc: Record<string, string> = {};
      for (const s of ["VERIFICATION", "PROOF", "SESSION", "DOMAIN", "WEBHOOK", "LOG"]) grpc[`${s}_GRPC_PORT`] = String(await freePort());
      const s = start({
        DATABASE_URL: await database(),
        WORKERS: "2",
        PORT: String(port),
        ADMIN_PORT: String(await freePort()),
        ...grpc,
        LOG_LEVEL: "info",
        BOOTSTRAP_DEV_TENANT: "false",
      });
      // the workers it had, seen while it ran
      const seen = new Set<number>();
      const watch = setInterval(() => {
        for (const pid of workers(s.child.pid!).values()) seen.add(pid);
      }, 20);
      const code = await s.exited;
      clearInterval(watch);
      expect(code).toBe(1);
      expect(s.out.text).toContain("EADDRINUSE");
      expect(s.out.text).toContain('"msg":"worker failed during start; stopping"');
      expect(seen.size).toBeGreaterThan(0);
      for (const pid of seen) expect(alive(pid)).toBe(false);
    } finally {
      taken.close();
    }
  }, 120_000);
});
