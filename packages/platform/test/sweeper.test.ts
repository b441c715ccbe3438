import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { createLogger } from "../src/logger.ts";
import { startSweeper } from "../src/sweeper.ts";
import { lineCollector } from "./support/log-lines.ts";

const quiet = createLogger({ level: "silent" });

describe("sweeper", () => {
  it("runs the sweep every interval", async () => {
    let runs = 0;
    const s = startSweeper("t", async () => (runs++, 0), 20, quiet);
    await sleep(150);
    await s.stop();
    expect(runs).toBeGreaterThanOrEqual(3);
  });

  it("runs one sweep at a time even when a sweep outlasts the interval", async () => {
    let active = 0;
    let maxActive = 0;
    let runs = 0;
    const s = startSweeper(
      "slow",
      async () => {
        active++;
        runs++;
        maxActive = Math.max(maxActive, active);
        await sleep(80);
        active--;
        return 1;
      },
      10,
      quiet,
    );
    await sleep(300);
    await s.stop();
    expect(runs).toBeGreaterThanOrEqual(2);
    expect(maxActive).toBe(1);
  });

  it("stop() waits for the sweep in progress, and nothing runs after it", async () => {
    let finished = 0;
    let started = 0;
    const s = startSweeper(
      "wait",
      async () => {
        started++;
        await sleep(150);
        finished++;
        return 0;
      },
      10,
      quiet,
    );
    while (started === 0) await sleep(5);
    await s.stop();
    expect(finished).toBe(started);
    const after = started;
    await sleep(60);
    expect(started).toBe(after);
  });

  it("logs a failed sweep and tries again on the next tick; logs how many rows a sweep moved", async () => {
    const out = lineCollector();
    const log = createLogger({ level: "info", destination: out });
    let calls = 0;
    const s = startSweeper(
      "flaky",
      async () => {
        calls++;
        if (calls === 1) throw new Error("database went away");
        return calls === 2 ? 7 : 0;
      },
      15,
      log,
    );
    while (calls < 3) await sleep(5);
    await s.stop();
    const recs = out.records();
    expect(recs.find((r) => r.msg === "sweep failed")).toMatchObject({ level: "error", sweeper: "flaky" });
    expect(recs.filter((r) => r.msg === "sweep")).toEqual([expect.objectContaining({ sweeper: "flaky", moved: 7 })]);
  });
});
