// The in-memory caches of the hot reads (settled verifications, revocation states, verified proof
// tokens): bounded, least recently used first, and a stale row never stored after its drop. The
// cross-worker behaviour (a drop by the event of another worker) is in
// services/proof/test/revocation-cache.test.ts.
import { describe, expect, it } from "vitest";
import { BoundedMap, EventCache } from "../src/event-cache.ts";

describe("BoundedMap", () => {
  it("holds at most max entries; the oldest not used since goes first", () => {
    const m = new BoundedMap<string, number>(3);
    m.set("a", 1);
    m.set("b", 2);
    m.set("c", 3);
    expect(m.get("a")).toBe(1); // a used: it survives the next eviction
    m.set("d", 4); // b goes
    expect(m.size).toBe(3);
    expect(m.get("b")).toBeUndefined();
    expect([m.get("a"), m.get("c"), m.get("d")]).toEqual([1, 3, 4]);
  });

  it("evicts even when every entry was used (each keeps its mark for one round only)", () => {
    const m = new BoundedMap<string, number>(3);
    for (const k of ["a", "b", "c"]) m.set(k, 0);
    for (const k of ["a", "b", "c"]) m.get(k);
    m.set("d", 1);
    expect(m.size).toBe(3);
    expect(m.get("a")).toBeUndefined(); // the oldest, once its mark was spent
    m.set("e", 2);
    expect(m.size).toBe(3);
    expect(m.get("e")).toBe(2);
  });

  it("set on a present key replaces its value in place; delete and clear forget", () => {
    const m = new BoundedMap<string, number>(2);
    m.set("a", 1);
    m.set("a", 2);
    expect(m.size).toBe(1);
    expect(m.get("a")).toBe(2);
    expect(m.delete("a")).toBe(true);
    expect(m.get("a")).toBeUndefined();
    m.set("b", 1);
    m.clear();
    expect(m.size).toBe(0);
  });

  it("stays bounded and answers every present key under a long mixed load", () => {
    const m = new BoundedMap<number, number>(100);
    for (let i = 0; i < 10_000; i++) {
      m.set(i % 250, i);
      if (i % 3 === 0) m.get((i * 7) % 250);
      expect(m.size).toBeLessThanOrEqual(100);
    }
    expect(m.get(9_999 % 250)).toBe(9_999);
  });

  it("a hit on a hot key leaves the map as it is (no delete and set per read)", () => {
    const m = new BoundedMap<string, number>(10_000);
    for (let i = 0; i < 10_000; i++) m.set(`id_${i}`, i);
    const inner = (m as unknown as { entries: Map<string, unknown> }).entries;
    const order = [...inner.keys()].slice(0, 3);
    for (let i = 0; i < 1_000; i++) m.get(`id_${i % 3}`);
    expect([...inner.keys()].slice(0, 3)).toEqual(order);
  });
});

describe("EventCache", () => {
  it("stores only cacheable rows and answers later reads from memory", async () => {
    const cache = new EventCache<{ status: string }>((v) => v.status !== "pending");
    let reads = 0;
    const read = (status: string) => async () => (reads++, { status });
    expect(await cache.load("p", read("pending"))).toEqual({ status: "pending" });
    expect(await cache.load("p", read("pending"))).toEqual({ status: "pending" });
    expect(await cache.load("v", read("verified"))).toEqual({ status: "verified" });
    expect(await cache.load("v", read("revoked"))).toEqual({ status: "verified" });
    expect(reads).toBe(3);
    expect([cache.hits, cache.misses]).toEqual([1, 3]);
  });

  it("a drop makes the next read go to the source", async () => {
    const cache = new EventCache<{ status: string }>(() => true);
    await cache.load("v", async () => ({ status: "verified" }));
    cache.drop("v");
    expect(await cache.load("v", async () => ({ status: "revoked" }))).toEqual({ status: "revoked" });
    expect(await cache.load("v", async () => ({ status: "other" }))).toEqual({ status: "revoked" });
  });

  it("a read that began before a drop stores nothing, even when the drop is long forgotten", async () => {
    const cache = new EventCache<number>(() => true, 2);
    let finish: (v: number) => void = () => undefined;
    const slow = cache.load("x", () => new Promise((r) => (finish = r)));
    cache.drop("x");
    for (const id of ["a", "b", "c", "d"]) cache.drop(id); // x's drop falls out of the remembered ones
    finish(1);
    expect(await slow).toBe(1);
    expect(cache.size).toBe(0);
    expect(await cache.load("x", async () => 2)).toBe(2);
    expect(await cache.load("x", async () => 3)).toBe(2);
  });

  it("holds at most its bound under many ids", async () => {
    const cache = new EventCache<number>(() => true, 50);
    for (let i = 0; i < 500; i++) await cache.load(`id_${i}`, async () => i);
    expect(cache.size).toBe(50);
    expect(await cache.load("id_499", async () => -1)).toBe(499);
  });
});
