// Runs the stack the way `npm start` does (its command, in a child process group),
// on free ports and a temp DATA_DIR, and measures what the bench reports about the process itself.
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";

export const REPO_ROOT = path.resolve(import.meta.dirname, "..", "..");
const SERVICE_PORT_VARS = ["VERIFICATION_GRPC_PORT", "PROOF_GRPC_PORT", "SESSION_GRPC_PORT", "DOMAIN_GRPC_PORT", "WEBHOOK_GRPC_PORT", "LOG_GRPC_PORT"];

/** n distinct free loopback ports (all held open together, then released). */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<net.Server>((resolve, reject) => {
          const s = net.createServer();
          s.once("error", reject);
          s.listen(0, "127.0.0.1", () => resolve(s));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as net.AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

/** A fresh database on the Postgres of `url`; `drop()` removes it again. */
export async function freshPostgres(url: string): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const name = `icv_bench_${randomBytes(5).toString("hex")}`;
  const run = async (sql: string) => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await run(`CREATE DATABASE ${name}`);
  const u = new URL(url);
  u.pathname = `/${name}`;
  return { url: u.toString(), name, drop: () => run(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/** Everything the bench's stack child needs in its environment. */
export async function stackEnv(dataDir: string, extra: Record<string, string | undefined>): Promise<Record<string, string>> {
  const [port, adminPort, ...grpc] = await freePorts(2 + SERVICE_PORT_VARS.length);
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  // the bench decides these; inherited values would point the child somewhere else
  for (const k of ["DATABASE_URL", "REDIS_URL", "KAFKA_BROKERS", "PUBLIC_BASE_URL", "ADMIN_TOKEN"]) delete env[k];
  Object.assign(env, {
    DATA_DIR: dataDir,
    HOST: "127.0.0.1",
    GRPC_HOST: "127.0.0.1",
    PORT: String(port),
    ADMIN_PORT: String(adminPort),
    LOG_LEVEL: "warn",
    RATE_LIMIT_PER_MINUTE: "1000000000",
    SSE_MAX_CONNECTIONS_PER_TENANT: "1000000",
    // every client of the bench (autocannon, 10,000 SSE streams) comes from 127.0.0.1: no per-address cap
    HTTP_MAX_CONNECTIONS_PER_IP: "0",
    BOOTSTRAP_DEV_TENANT: "false",
    SHUTDOWN_TIMEOUT_MS: "3000",
  });
  SERVICE_PORT_VARS.forEach((k, i) => {
    env[k] = String(grpc[i]);
  });
  for (const [k, v] of Object.entries(extra)) if (v) env[k] = v;
  return env;
}

export interface RunningStack {
  url: string;
  adminUrl: string;
  /** ms from spawning the `npm start` command to the first GET /health 200 */
  startMs: number;
  /** the process that runs start-all.ts (not an npx/tsx wrapper in front of it): with workers, their primary */
  mainPid(): number | undefined;
  /** `npm start`'s workers (children of mainPid; 0 when it serves alone) */
  workers(): number;
  /** RSS of that process and its workers, bytes */
  rss(): number | undefined;
  stop(): Promise<void>;
  output(): string;
}

/**
 * The command `npm start` runs (package.json scripts.start), without npm itself in front: `node …`
 * runs on this node, anything else through npx. BENCH_CPU_PROF (a directory) adds --cpu-prof,
 * which NODE_OPTIONS may not carry. BENCH_NODE_FLAGS replaces the runtime flags of the start
 * command (those before --import), to measure one; `none` runs without any.
 */
function startCommand(): [string, string[]] {
  const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as { scripts?: { start?: string } };
  let words = (pkg.scripts?.start ?? "node --import tsx scripts/start-all.ts").trim().split(/\s+/);
  const flags = process.env.BENCH_NODE_FLAGS;
  if (flags && words[0] === "node") {
    const rest = words.slice(words.indexOf("--import"));
    words = ["node", ...(flags === "none" ? [] : flags.split(/\s+/)), ...rest];
  }
  const profileDir = process.env.BENCH_CPU_PROF;
  if (words[0] === "node") return [process.execPath, [...(profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : []), ...words.slice(1)]];
  if (profileDir) return [process.execPath, ["--cpu-prof", `--cpu-prof-dir=${profileDir}`, "--import", "tsx", ...words.slice(1)]];
  return ["npx", words];
}

/** Starts the stack and waits (up to timeoutMs) for /health to answer 200. */
export async function startStack(env: Record<string, string>, timeoutMs = 60_000): Promise<RunningStack> {
  const url = `http://127.0.0.1:${env.PORT}`;
  const adminUrl = `http://127.0.0.1:${env.ADMIN_PORT}`;
  const began = performance.now();
  const [cmd, args] = startCommand();
  const child = spawn(cmd, args, { cwd: REPO_ROOT, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  const keep = (d: Buffer) => {
    out = (out + d.toString()).slice(-8000);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  let exited: string | undefined;
  child.once("exit", (code, signal) => (exited = `exit code ${code}${signal ? `, signal ${signal}` : ""}`));

  const stack: RunningStack = {
    url,
    adminUrl,
    startMs: 0,
    mainPid: () => mainProcess(child.pid!),
    workers() {
      const pid = mainProcess(child.pid!);
      return pid === undefined ? 0 : descendants(pid).length;
    },
    rss() {
      const pid = mainProcess(child.pid!);
      if (pid === undefined) return undefined;
      return [pid, ...descendants(pid)].reduce((sum, p) => sum + (rssOf(p) ?? 0), 0);
    },
    stop: () => stopGroup(child),
    output: () => out,
  };
  const deadline = began + timeoutMs;
  for (;;) {
    if (exited) throw new Error(`the stack exited before it was healthy (${exited}):\n${out}`);
    if (performance.now() > deadline) {
      await stack.stop();
      throw new Error(`the stack was not healthy within ${timeoutMs} ms:\n${out}`);
    }
    try {
      const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      if (res.status === 200) break;
    } catch {
      // not listening yet
    }
    await sleep(25);
  }
  stack.startMs = performance.now() - began;
  return stack;
}

/** SIGTERM to the child's process group, wait until every member is gone (SIGKILL after 15 s). */
async function stopGroup(child: ChildProcess): Promise<void> {
  const pgid = child.pid!;
  const alive = () => {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch {
      return false;
    }
  };
  if (!alive()) return;
  process.kill(-pgid, "SIGTERM");
  const deadline = Date.now() + 15_000;
  while (alive() && Date.now() < deadline) await sleep(50);
  if (alive()) {
    process.kill(-pgid, "SIGKILL");
    while (alive()) await sleep(50);
  }
}

/** The child, grandchild, … of `root` on Linux, read from /proc. */
function descendants(root: number): number[] {
  const parent = new Map<number, number>();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      parent.set(Number(d), ppid);
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const [pid, pp] of parent) {
      if (pp !== p) continue;
      out.push(pid);
      walk(pid);
    }
  };
  walk(root);
  return out;
}

/**
 * The node process that runs start-all.ts: the first one in the tree (parents before children)
 * whose command line names it; its workers, which name it too, are its children.
 */
function mainProcess(root: number): number | undefined {
  const tree = [root, ...descendants(root)];
  const named = tree.filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("start-all.ts");
    } catch {
      return false;
    }
  });
  return named[0];
}

export function rssOf(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Creates a tenant over the admin Connect endpoint (JSON), with the token from DATA_DIR. */
export async function createTenant(adminUrl: string, dataDir: string, name: string): Promise<{ tenantId: string; liveKey: string; testKey: string }> {
  const token = readFileSync(path.join(dataDir, "secrets", "admin-token"), "utf8").trim();
  const res = await fetch(`${adminUrl}/icv.gateway.v1.AdminService/CreateTenant`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({ name }),
  });
  const body = (await res.json()) as { tenant?: { id: string }; liveKey?: string; testKey?: string };
  if (res.status !== 200 || !body.tenant || !body.testKey || !body.liveKey) throw new Error(`CreateTenant failed: ${res.status} ${JSON.stringify(body)}`);
  return { tenantId: body.tenant.id, liveKey: body.liveKey, testKey: body.testKey };
}

/** A test phone verification made and verified through the API: its id and its proof token (what the read cases load). */
export async function verifiedPhone(url: string, testKey: string, identifier: string): Promise<{ id: string; proofToken: string }> {
  const post = async (p: string, body?: unknown) => {
    const res = await fetch(url + p, {
      method: "POST",
      headers: { authorization: `Bearer ${testKey}`, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return (await res.json()) as Record<string, string>;
  };
  const created = await post("/api/v1/verifications", { type: "phone", channel: "telegram", identifier });
  const verified = await post(`/api/v1/verifications/${created.id}/test-verify`);
  if (!created.id || !verified.proof_token) throw new Error(`could not make a verified phone: ${JSON.stringify(verified)}`);
  return { id: created.id, proofToken: verified.proof_token };
}

/** Starts a hello-world baseline (node:http, or Express) in its own process; resolves with its URL and a stop function. */
export function startHelloWorld(kind: "node" | "express" = "node"): Promise<Baseline> {
  return startBaseline("hello-world.ts", [kind], { NODE_OPTIONS: "" });
}

export interface Baseline {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/**
 * Starts a baseline server of scripts/bench (`script`, which prints `listening PORT` once it
 * listens) in its own process, with `env` over this process's environment.
 */
export async function startBaseline(script: string, args: string[] = [], env: Record<string, string | undefined> = {}): Promise<Baseline> {
  const child = spawn(process.execPath, ["--import", "tsx", path.join(REPO_ROOT, "scripts", "bench", script), ...args], {
    cwd: REPO_ROOT,
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, ...env },
  });
  const port = await new Promise<number>((resolve, reject) => {
    let buf = "";
    child.stdout!.on("data", (d: Buffer) => {
      buf += d.toString();
      const m = /listening (\d+)/.exec(buf);
      if (m) resolve(Number(m[1]));
    });
    child.once("exit", (code) => reject(new Error(`${script} exited (${code})`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}
