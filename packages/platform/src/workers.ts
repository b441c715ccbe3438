import cluster, { type Worker } from "node:cluster";
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { AggregatorRegistry } from "prom-client";
import { ConfigError, type Config } from "./config.ts";
import type { Logger } from "./logger.ts";

/**
 * `npm start` as several processes (node:cluster): the primary forks WORKERS workers, which all
 * listen on the same ports (the primary hands out the connections), restarts one that dies, and
 * stops them all on SIGTERM. Worker slot 1 is the deployment's one background worker: outbox
 * relays, sweepers, the postgres transport's consumer groups and Telegram polling run there only
 * (they are safe side by side, but N copies would only race for the same locks); every worker
 * serves requests and follows every event (its caches and SSE streams).
 */

/** Set by the primary in each worker's environment: its slot, 1…WORKERS (a restarted worker keeps its slot). */
const SLOT_VAR = "ICV_WORKER_SLOT";
const READY = "icv:worker-ready";
const METRICS_REQ = "icv:metrics-req";
const METRICS_RES = "icv:metrics-res";

/** This process's slot under `npm start`'s primary; undefined when it is not one of its workers. */
export function workerSlot(): number | undefined {
  if (!cluster.isWorker) return undefined;
  const n = Number(process.env[SLOT_VAR]);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

/** True unless this process is a worker other than slot 1: sweepers, relays and consumer groups run only where this holds. */
export function runsBackgroundWork(): boolean {
  const slot = workerSlot();
  return slot === undefined || slot === 1;
}

/** The services that keep a database: each needs a Postgres URL for WORKERS > 1. */
const WITH_DATABASE = ["gateway", "proof", "verification", "session", "webhook", "log"] as const;

/**
 * The whole CPUs of a cgroup's CPU quota (`cpu.max` of cgroup v2, "max 100000" or "<quota> <period>";
 * cgroup v1's cfs_quota_us and cfs_period_us), or undefined when there is none. A quota below one
 * CPU still counts as one.
 */
export function cpusOfQuota(quota: string | undefined, period?: string): number | undefined {
  const [q, p] = period === undefined ? (quota ?? "").trim().split(/\s+/) : [quota?.trim(), period.trim()];
  const n = Number(q) / Number(p);
  return Number.isFinite(n) && n > 0 ? Math.max(1, Math.floor(n)) : undefined;
}

const readOrUndefined = (file: string) => {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
};

/** The CPUs this process may use: the cores it may run on, less when its container has a CPU quota. */
export function cpuBudget(): number {
  const quota =
    cpusOfQuota(readOrUndefined("/sys/fs/cgroup/cpu.max")) ??
    cpusOfQuota(readOrUndefined("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), readOrUndefined("/sys/fs/cgroup/cpu/cpu.cfs_period_us") ?? "");
  return Math.min(availableParallelism(), quota ?? Number.POSITIVE_INFINITY);
}

/** A database on this machine: a loopback host, or a Unix socket (no host, or a `host=/path` parameter). */
export function isLocalDatabase(url: string): boolean {
  if (/[?&]host=(\/|%2f)/i.test(url)) return true;
  // the authority (after any user@), up to the path
  const host = /^[a-z]+:\/\/(?:[^@/?]*@)?(\[[^\]]*\]|[^:/?]*)/i.exec(url)?.[1];
  return host !== undefined && /^(|localhost|\[::1\]|127(\.\d+){3})$/i.test(host);
}

/**
 * How many processes `npm start` runs, and why (for the start-up log line). One per CPU, less one
 * when a database is on this machine: its server needs a core of its own (on 2 cores one process
 * signed 20–25 % more proofs than two, docs/performance.md).
 */
export function workerPlan(config: Config, cpus: number = cpuBudget()): { workers: number; reason: string } {
  const urls = WITH_DATABASE.map((s) => config.databaseUrl(s));
  const embedded = urls.some((u) => !u);
  if (config.WORKERS !== undefined) {
    if (config.WORKERS > 1 && embedded)
      throw new ConfigError(
        "invalid configuration: WORKERS above 1 needs DATABASE_URL (or every <SERVICE>_DATABASE_URL): the embedded PGlite is single-process",
      );
    return { workers: config.WORKERS, reason: "WORKERS" };
  }
  if (embedded) return { workers: 1, reason: "embedded PGlite is single-process" };
  if (!config.REDIS_URL) return { workers: 1, reason: "no REDIS_URL: rate, send and stream limits would count per process" };
  if (urls.some((u) => isLocalDatabase(u!)) && cpus > 1) return { workers: cpus - 1, reason: "one per CPU, less one for the database on this machine" };
  return { workers: cpus, reason: "one per CPU" };
}

/** A worker's share of DB_POOL_MAX: the processes together hold about what one process would. */
export const workerPoolMax = (poolMax: number, workers: number): number => Math.max(2, Math.ceil(poolMax / workers));

export interface PrimaryOptions {
  workers: number;
  logger: Logger;
  /** DB_POOL_MAX, split between the workers. */
  poolMax: number;
  /** A worker that does not stop within this after SIGTERM is killed (SHUTDOWN_TIMEOUT_MS plus a margin). */
  stopTimeoutMs: number;
  /** Runs before each fork, in the primary (files every worker reads: certificates). */
  beforeFork?: () => Promise<void>;
}

/** A crash within this of its start doubles the wait before the next start of that slot (up to MAX_RESTART_DELAY_MS). */
const STABLE_MS = 30_000;
const FIRST_RESTART_DELAY_MS = 500;
const MAX_RESTART_DELAY_MS = 30_000;

/**
 * The primary: forks worker 1, the others once it is ready; restarts a worker that ends on its
 * own (at once after a long life, with a doubling delay after quick crashes: no restart storm);
 * answers the workers' asks for the metrics of all of them; on SIGTERM or SIGINT stops every
 * worker (SIGTERM, SIGKILL after stopTimeoutMs) and exits 0 when all of them stopped cleanly. A
 * worker that fails before any worker was ever ready (a port taken, a bad certificate) stops the
 * whole start: exit 1.
 */
export function runPrimary(opts: PrimaryOptions): void {
  const { logger } = opts;
  const aggregator = new AggregatorRegistry();
  const slots = new Map<number, { worker?: Worker; started: number; delay: number; timer?: NodeJS.Timeout }>();
  let stopping = false;
  let everReady = false;
  let failed = false;

  cluster.on("message", (worker, m: { type?: string; id?: number }) => {
    if (m?.type !== METRICS_REQ) return;
    aggregator.clusterMetrics().then(
      (body) => worker.isConnected() && worker.send({ type: METRICS_RES, id: m.id, body, contentType: aggregator.contentType }),
      (err: Error) => worker.isConnected() && worker.send({ type: METRICS_RES, id: m.id, error: err.message }),
    );
  });

  const fork = async (slot: number) => {
    const s = slots.get(slot)!;
    s.timer = undefined;
    if (stopping) return;
    try {
      await opts.beforeFork?.();
    } catch (err) {
      logger.error({ err, worker: slot }, "could not prepare the worker's start; stopping");
      failed = true;
      return stop("start failed");
    }
    if (stopping) return;
    const env: Record<string, string> = { [SLOT_VAR]: String(slot), DB_POOL_MAX: String(workerPoolMax(opts.poolMax, opts.workers)) };
    // the development tenant is made (and shown) once
    if (slot !== 1) env.BOOTSTRAP_DEV_TENANT = "false";
    const worker = cluster.fork(env);
    s.worker = worker;
    s.started = Date.now();
    worker.on("message", (m: { type?: string }) => {
      if (m?.type !== READY || everReady) return;
      everReady = true;
      // the others once the first serves: it starts as fast as one process would (no two starts
      // sharing the cores), and it has run the migrations and made the development tenant
      for (let other = 2; other <= opts.workers; other++) void fork(other);
    });
    worker.once("exit", (code, signal) => {
      s.worker = undefined;
      if (stopping) return allStopped(code);
      failed ||= !everReady;
      if (failed) {
        logger.error({ worker: slot, exit_code: code, signal }, "worker failed during start; stopping");
        return stop("start failed");
      }
      s.delay = Date.now() - s.started >= STABLE_MS ? 0 : Math.min(MAX_RESTART_DELAY_MS, Math.max(FIRST_RESTART_DELAY_MS, s.delay * 2));
      logger.error({ worker: slot, pid: worker.process.pid, exit_code: code, signal, restart_in_ms: s.delay }, "worker ended; restarting it");
      s.timer = setTimeout(() => void fork(slot), s.delay);
    });
  };

  let killTimer: NodeJS.Timeout | undefined;
  const allStopped = (code: number | null) => {
    if (code !== 0) failed = true;
    if ([...slots.values()].some((s) => s.worker)) return;
    clearTimeout(killTimer);
    logger.info({ failed }, "all workers stopped");
    process.exit(failed ? 1 : 0);
  };

  const stop = (why: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal: why }, "shutting down the workers");
    for (const s of slots.values()) clearTimeout(s.timer);
    const live = [...slots.values()].filter((s) => s.worker);
    if (!live.length) process.exit(failed ? 1 : 0);
    for (const s of live) s.worker!.process.kill("SIGTERM");
    killTimer = setTimeout(() => {
      logger.error("workers still running after the shutdown timeout; killing them");
      failed = true;
      for (const s of slots.values()) s.worker?.process.kill("SIGKILL");
    }, opts.stopTimeoutMs);
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  // SIGHUP (reload INTERNAL_CLIENTS_FILE) reaches the primary: every worker reloads
  if (process.env.INTERNAL_CLIENTS_FILE)
    process.on("SIGHUP", () => {
      for (const s of slots.values()) s.worker?.process.kill("SIGHUP");
    });

  for (let slot = 1; slot <= opts.workers; slot++) slots.set(slot, { started: 0, delay: 0 });
  void fork(1);
}

/**
 * A worker's side: its metrics reach the primary's aggregation, and `GET /metrics` here answers
 * the sum over every worker (asked of the primary). The answer tells the primary this worker is ready.
 */
export async function initWorker(): Promise<{ ready(): void }> {
  // loaded here, not by the primary (the metrics pull in the database drivers)
  const { metricsRegistry, setMetricsSource, startDefaultMetrics } = await import("./metrics.ts");
  // installs prom-client's answer to the primary's requests for this worker's metrics
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([metricsRegistry]);
  startDefaultMetrics();
  let next = 0;
  const pending = new Map<number, { resolve(v: { body: string; contentType: string }): void; reject(e: Error): void; timer: NodeJS.Timeout }>();
  process.on("message", (m: { type?: string; id: number; body?: string; contentType?: string; error?: string }) => {
    if (m?.type !== METRICS_RES) return;
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    clearTimeout(p.timer);
    if (m.error !== undefined) p.reject(new Error(m.error));
    else p.resolve({ body: m.body ?? "", contentType: m.contentType ?? metricsRegistry.contentType });
  });
  setMetricsSource(
    () =>
      new Promise((resolve, reject) => {
        const id = next++;
        const timer = setTimeout(() => {
          pending.delete(id);
          reject(new Error("the primary did not answer with the workers' metrics"));
        }, 10_000);
        pending.set(id, { resolve, reject, timer });
        process.send!({ type: METRICS_REQ, id });
      }),
  );
  return { ready: () => process.send?.({ type: READY }) };
}
