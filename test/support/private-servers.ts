// A Postgres and a Redis of a test's own (own port, own data dir), which the test may stop and
// start again: outages without touching the machine's shared servers. Each answers undefined
// when its binaries are absent (the test then skips and says why).
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";

const isFree = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
  });

const handedOut = new Set<number>();

/**
 * A free port to bind later, below Linux's ephemeral range (32768–60999): the kernel never hands
 * it to another socket meanwhile (a listen(0) or an outgoing connection of a test running beside).
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (handedOut.has(port)) continue;
    handedOut.add(port); // never the same port twice in this process, even to callers asking at once
    if (await isFree(port)) return port;
  }
}

/** `n` consecutive free ports (as freePort): for a setting that counts up from a base port. */
export async function freePorts(n: number): Promise<number[]> {
  for (;;) {
    const base = await freePort();
    const rest = Array.from({ length: n - 1 }, (_, i) => base + 1 + i);
    if (rest.some((p) => handedOut.has(p))) continue;
    for (const p of rest) handedOut.add(p);
    if ((await Promise.all(rest.map(isFree))).every(Boolean)) return [base, ...rest];
  }
}

const PG_ROOT = "/usr/lib/postgresql";
const pgBin = (): string | undefined => {
  if (!existsSync(PG_ROOT)) return undefined;
  const v = readdirSync(PG_ROOT).sort((a, b) => Number(b) - Number(a))[0];
  const bin = v && path.join(PG_ROOT, v, "bin");
  return bin && existsSync(path.join(bin, "pg_ctl")) ? bin : undefined;
};
export const havePostgresBinaries = !!pgBin();
const whichRedis = (): string | undefined => {
  for (const d of (process.env.PATH ?? "").split(":")) if (existsSync(path.join(d, "redis-server"))) return path.join(d, "redis-server");
  return undefined;
};
export const haveRedisBinary = !!whichRedis();

/** initdb refuses root: as root, the data dir belongs to `postgres` and the tools run as it. */
const asRoot = process.getuid?.() === 0;
const run = (bin: string, args: string[]) =>
  asRoot ? execFileSync("runuser", ["-u", "postgres", "--", bin, ...args], { stdio: "pipe" }) : execFileSync(bin, args, { stdio: "pipe" });

export interface PrivatePostgres {
  url: string;
  stop(): void;
  start(): void;
  /** Freezes the server (SIGSTOP to every process of it): connections stay open, nothing is answered, as a hung Postgres. */
  pause(): void;
  /** Lets a paused server go on (SIGCONT). */
  resume(): void;
  close(): void;
}

const postmasterPid = (data: string): number => Number(readFileSync(path.join(data, "postmaster.pid"), "utf8").split("\n")[0]);

/** The children of `parent` (a postmaster's backends and background workers), from /proc. */
function childPids(parent: number): number[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces, so read after its ")"
        const stat = readFileSync(`/proc/${d}/stat`, "utf8");
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === parent;
      } catch {
        return false; // ended meanwhile
      }
    })
    .map(Number);
}

/** Sends `signal` to the server of `data`: the postmaster first, so that it forks nothing new meanwhile, then its children. */
function signalServer(data: string, signal: NodeJS.Signals): void {
  const main = postmasterPid(data);
  process.kill(main, signal);
  for (const pid of childPids(main)) {
    try {
      process.kill(pid, signal);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ESRCH") throw e; // a backend that ended meanwhile
    }
  }
}

export async function privatePostgres(): Promise<PrivatePostgres> {
  const bin = pgBin();
  if (!bin) throw new Error("no postgres binaries");
  const dir = mkdtempSync(path.join(tmpdir(), "icv-pg-"));
  chmodSync(dir, 0o700);
  if (asRoot) {
    const uid = Number(execFileSync("id", ["-u", "postgres"]).toString());
    const gid = Number(execFileSync("id", ["-g", "postgres"]).toString());
    chownSync(dir, uid, gid);
  }
  const data = path.join(dir, "data");
  run(path.join(bin, "initdb"), ["-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"]);
  const port = await freePort();
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
  const ctl = (...args: string[]) => run(path.join(bin, "pg_ctl"), ["-D", data, "-w", "-l", path.join(dir, "log"), ...args]);
  ctl("-o", opts, "start");
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    // fast: connections are cut at once (what a failover or a restart does to clients)
    stop: () => void ctl("-m", "fast", "stop"),
    start: () => void ctl("-o", opts, "start"),
    pause: () => signalServer(data, "SIGSTOP"),
    resume: () => signalServer(data, "SIGCONT"),
    close() {
      try {
        signalServer(data, "SIGCONT");
      } catch {
        // not running
      }
      try {
        ctl("-m", "immediate", "stop");
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface PrivateRedis {
  url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Freezes the server (SIGSTOP): connections stay open, nothing is answered, as a hung Redis. */
  pause(): void;
  /** Lets a paused server go on (SIGCONT). */
  resume(): void;
  close(): Promise<void>;
}

export async function privateRedis(): Promise<PrivateRedis> {
  const bin = whichRedis();
  if (!bin) throw new Error("no redis-server");
  const port = await freePort();
  let proc: ChildProcess | undefined;
  const start = async () => {
    const p = spawn(bin, ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
      stdio: ["ignore", "pipe", "ignore"],
    });
    proc = p;
    await new Promise<void>((resolve, reject) => {
      p.once("exit", () => reject(new Error("redis-server exited")));
      p.stdout!.on("data", (b: Buffer) => b.toString().includes("Ready to accept connections") && resolve());
    });
  };
  const stop = async () => {
    const p = proc;
    proc = undefined;
    if (!p || p.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      p.once("exit", () => resolve());
      p.kill("SIGKILL");
    });
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    start,
    stop,
    pause: () => proc?.kill("SIGSTOP"),
    resume: () => proc?.kill("SIGCONT"),
    close: async () => {
      proc?.kill("SIGCONT");
      await stop();
    },
  };
}
