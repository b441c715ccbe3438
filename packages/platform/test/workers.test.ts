// How many processes `npm start` runs (WORKERS), and each worker's share of the database pool.
// The processes themselves are tested in test/resilience/workers.test.ts.
import { availableParallelism } from "node:os";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../src/config.ts";
import { cpuBudget, cpusOfQuota, isLocalDatabase, runsBackgroundWork, workerPlan, workerPoolMax, workerSlot } from "../src/workers.ts";

const PG = "postgres://postgres@127.0.0.1:5432/icv";
const REMOTE_PG = "postgres://icv@db.internal:5432/icv";
const plan = (env: Record<string, string>, cpus = 4) => workerPlan(parseConfig(env), cpus);

describe("workerPlan", () => {
  it("one process on the embedded PGlite, and WORKERS above 1 there is refused", () => {
    expect(plan({})).toEqual({ workers: 1, reason: "embedded PGlite is single-process" });
    expect(plan({ WORKERS: "1" }).workers).toBe(1);
    expect(() => plan({ WORKERS: "2" })).toThrow(/WORKERS above 1 needs DATABASE_URL/);
    // one service left on PGlite is embedded too
    expect(() => plan({ WORKERS: "2", VERIFICATION_DATABASE_URL: PG })).toThrow(/needs DATABASE_URL/);
  });

  it("one per CPU with a Postgres elsewhere and Redis, one less with the Postgres on this machine; one without Redis (limits would count per process); WORKERS decides when set", () => {
    const redis = "redis://127.0.0.1:6379";
    expect(plan({ DATABASE_URL: REMOTE_PG, REDIS_URL: redis })).toEqual({ workers: 4, reason: "one per CPU" });
    expect(plan({ DATABASE_URL: PG, REDIS_URL: redis })).toEqual({ workers: 3, reason: "one per CPU, less one for the database on this machine" });
    // on 2 cores beside a local Postgres: one process (it signs more proofs than two, docs/performance.md)
    expect(plan({ DATABASE_URL: PG, REDIS_URL: redis }, 2).workers).toBe(1);
    expect(plan({ DATABASE_URL: PG, REDIS_URL: redis }, 1).workers).toBe(1);
    // one service's database on this machine is enough
    expect(plan({ DATABASE_URL: REMOTE_PG, PROOF_DATABASE_URL: PG, REDIS_URL: redis }).workers).toBe(3);
    expect(workerPlan(parseConfig({ DATABASE_URL: REMOTE_PG, REDIS_URL: redis })).workers).toBe(cpuBudget());
    expect(plan({ DATABASE_URL: PG }).workers).toBe(1);
    expect(plan({ DATABASE_URL: PG, WORKERS: "3" })).toEqual({ workers: 3, reason: "WORKERS" });
    expect(plan({ DATABASE_URL: PG, REDIS_URL: "redis://127.0.0.1:6379", WORKERS: "1" }).workers).toBe(1);
    expect(() => parseConfig({ WORKERS: "0" })).toThrow(/WORKERS/);
  });

  it("a database on this machine: loopback hosts and Unix sockets", () => {
    for (const u of [
      PG,
      "postgres://localhost/icv",
      "postgres://[::1]:5432/icv",
      "postgres:///icv",
      "postgres://u@/icv?host=/var/run/postgresql",
      "postgresql://127.0.0.2/x",
    ])
      expect(isLocalDatabase(u), u).toBe(true);
    for (const u of [REMOTE_PG, "postgres://10.0.0.5/icv", "postgres://u@db/icv?host=db2", "not a url"]) expect(isLocalDatabase(u), u).toBe(false);
  });

  it("counts a container's CPU quota: cgroup v2 cpu.max and v1 quota/period; none is undefined", () => {
    expect(cpusOfQuota("200000 100000\n")).toBe(2);
    expect(cpusOfQuota("150000 100000")).toBe(1);
    expect(cpusOfQuota("50000 100000")).toBe(1);
    expect(cpusOfQuota("max 100000")).toBeUndefined();
    expect(cpusOfQuota(undefined)).toBeUndefined();
    expect(cpusOfQuota("400000\n", "100000\n")).toBe(4);
    expect(cpusOfQuota("-1", "100000")).toBeUndefined();
    expect(cpusOfQuota("400000", "")).toBeUndefined();
    expect(cpuBudget()).toBeGreaterThanOrEqual(1);
    expect(cpuBudget()).toBeLessThanOrEqual(availableParallelism());
  });

  it("splits DB_POOL_MAX between the workers, at least 2 each", () => {
    expect(workerPoolMax(10, 1)).toBe(10);
    expect(workerPoolMax(10, 2)).toBe(5);
    expect(workerPoolMax(10, 3)).toBe(4);
    expect(workerPoolMax(10, 16)).toBe(2);
  });

  it("a process that is not a worker of npm start runs its background work", () => {
    expect(workerSlot()).toBeUndefined();
    expect(runsBackgroundWork()).toBe(true);
  });
});
