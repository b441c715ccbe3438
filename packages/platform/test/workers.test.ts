// How many processes `npm start` runs (WORKERS), and each worker's share of the database pool.
// The processes themselves are tested in test/resilience/workers.test.ts.
import { availableParallelism } from "node:os";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../src/config.ts";
import { runsBackgroundWork, workerPlan, workerPoolMax, workerSlot } from "../src/workers.ts";

const PG = "postgres://postgres@127.0.0.1:5432/icv";
const plan = (env: Record<string, string>) => workerPlan(parseConfig(env));

describe("workerPlan", () => {
  it("one process on the embedded PGlite, and WORKERS above 1 there is refused", () => {
    expect(plan({})).toEqual({ workers: 1, reason: "embedded PGlite is single-process" });
    expect(plan({ WORKERS: "1" }).workers).toBe(1);
    expect(() => plan({ WORKERS: "2" })).toThrow(/WORKERS above 1 needs DATABASE_URL/);
    // one service left on PGlite is embedded too
    expect(() => plan({ WORKERS: "2", VERIFICATION_DATABASE_URL: PG })).toThrow(/needs DATABASE_URL/);
  });

  it("one per core with Postgres and Redis; one without Redis (limits would count per process); WORKERS decides when set", () => {
    expect(plan({ DATABASE_URL: PG, REDIS_URL: "redis://127.0.0.1:6379" })).toEqual({
      workers: availableParallelism(),
      reason: "one per core",
    });
    expect(plan({ DATABASE_URL: PG }).workers).toBe(1);
    expect(plan({ DATABASE_URL: PG, WORKERS: "3" })).toEqual({ workers: 3, reason: "WORKERS" });
    expect(plan({ DATABASE_URL: PG, REDIS_URL: "redis://127.0.0.1:6379", WORKERS: "1" }).workers).toBe(1);
    expect(() => parseConfig({ WORKERS: "0" })).toThrow(/WORKERS/);
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
