import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { KeyCache, generateApiKey, hashApiKey, parseApiKey } from "../src/api-keys.ts";

describe("API keys", () => {
  it.each(["live", "test"] as const)("pk_%s_ keys are the prefix + 43 base62 characters, shown once, stored as sha256 hex", (env) => {
    const k = generateApiKey(env);
    expect(k.key).toMatch(new RegExp(`^pk_${env}_[0-9A-Za-z]{43}$`));
    expect(k.hash).toBe(createHash("sha256").update(k.key).digest("hex"));
    expect(k.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey(k.key)).toBe(k.hash);
    expect(k.prefix).toBe(k.key.slice(0, 12));
    expect(k.hash).not.toContain(k.key.slice(8));
  });

  it("every key is new, and every key has the same length", () => {
    const keys = Array.from({ length: 500 }, () => generateApiKey("test").key);
    expect(new Set(keys).size).toBe(500);
    expect(new Set(keys.map((k) => k.length))).toEqual(new Set([51]));
    // base62 of 32 random bytes uses the whole alphabet
    expect(new Set(keys.map((k) => k.slice("pk_test_".length)).join("")).size).toBe(62);
  });

  it("parseApiKey answers the environment of a well-formed key", () => {
    expect(parseApiKey(generateApiKey("live").key)).toBe("live");
    expect(parseApiKey(generateApiKey("test").key)).toBe("test");
  });

  it.each([
    ["another environment", `pk_prod_${"a".repeat(43)}`],
    ["one character short", `pk_test_${"a".repeat(42)}`],
    ["one character long", `pk_test_${"a".repeat(44)}`],
    ["a character outside base62", `pk_test_${"a".repeat(42)}-`],
    ["upper-case prefix", `PK_TEST_${"a".repeat(43)}`],
    ["surrounding space", ` pk_test_${"a".repeat(43)}`],
    ["trailing newline", `pk_test_${"a".repeat(43)}\n`],
    ["the whole header", `Bearer pk_test_${"a".repeat(43)}`],
    ["a webhook secret", `whsec_${"a".repeat(43)}`],
    ["empty", ""],
  ])("parseApiKey refuses %s", (_what, key) => {
    expect(parseApiKey(key)).toBeUndefined();
  });
});

describe("KeyCache", () => {
  it("answers a value until its TTL has passed, then forgets it", () => {
    const c = new KeyCache<string>(1_000);
    c.set("h1", "ten_1", 10_000);
    expect(c.get("h1", 10_000)).toBe("ten_1");
    expect(c.get("h1", 10_999)).toBe("ten_1");
    expect(c.get("h1", 11_000)).toBeUndefined();
    // gone for good, even if asked with an earlier time
    expect(c.get("h1", 10_500)).toBeUndefined();
  });

  it("caches negative answers (null) apart from unknown keys (undefined)", () => {
    const c = new KeyCache<string | null>(1_000);
    c.set("unknown-key-hash", null, 0);
    expect(c.get("unknown-key-hash", 500)).toBeNull();
    expect(c.get("never-asked", 500)).toBeUndefined();
  });

  it("caches nothing with a TTL of 0", () => {
    const c = new KeyCache<string>(0);
    c.set("h1", "ten_1", 0);
    expect(c.get("h1", 0)).toBeUndefined();
  });

  it("holds at most max entries, dropping the oldest first", () => {
    const c = new KeyCache<number>(60_000, 3);
    for (let i = 1; i <= 4; i++) c.set(`h${i}`, i, 0);
    expect(c.get("h1", 1)).toBeUndefined();
    expect([c.get("h2", 1), c.get("h3", 1), c.get("h4", 1)]).toEqual([2, 3, 4]);
  });

  it("clear() forgets everything (a revoked key is refused at once)", () => {
    const c = new KeyCache<string>(60_000);
    c.set("h1", "ten_1", 0);
    c.clear();
    expect(c.get("h1", 1)).toBeUndefined();
  });
});
