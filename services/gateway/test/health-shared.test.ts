// /health is not rate limited (the probes call it, issue 28 item 7): calls made while its check
// runs share that check, so a burst costs the database and the services one check at a time,
// and a call after it ends sees a fresh answer (no stale window).
import { describe, expect, it } from "vitest";
import { shared } from "../src/routes/meta.ts";

describe("shared (the /health check)", () => {
  it("runs one check for the calls made while it runs, and a new one after it ended", async () => {
    let runs = 0;
    let release: (v: number) => void = () => undefined;
    const check = shared(() => {
      runs++;
      return new Promise<number>((resolve) => (release = resolve));
    });
    const burst = Array.from({ length: 50 }, () => check());
    expect(runs).toBe(1);
    release(7);
    expect(await Promise.all(burst)).toEqual(Array(50).fill(7));
    const next = check();
    expect(runs).toBe(2);
    release(8);
    expect(await next).toBe(8);
  });

  it("a failed check is not kept: the next call checks again", async () => {
    let runs = 0;
    const check = shared(async () => {
      runs++;
      if (runs === 1) throw new Error("down");
      return "up";
    });
    await expect(check()).rejects.toThrow("down");
    expect(await check()).toBe("up");
    expect(runs).toBe(2);
  });
});
