import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { CODE_ALPHABET, CODE_LENGTH, codeHmac, codeMatches, generateCode, nonce, publicToken } from "../src/sending/challenge.ts";

describe("generateCode", () => {
  it("is 6 characters of A-Z0-9", () => {
    expect(CODE_ALPHABET).toBe("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
    expect(CODE_LENGTH).toBe(6);
    for (let i = 0; i < 2000; i++) expect(generateCode()).toMatch(/^[A-Z0-9]{6}$/);
  });

  it("is uniform over the 36 symbols (100 000 codes: each symbol within 5 % of its share, chi-square far below a generous bound)", () => {
    const counts = new Map<string, number>([...CODE_ALPHABET].map((c) => [c, 0]));
    const N = 100_000;
    for (let i = 0; i < N; i++) for (const ch of generateCode()) counts.set(ch, counts.get(ch)! + 1);
    const expected = (N * CODE_LENGTH) / CODE_ALPHABET.length;
    let chi2 = 0;
    for (const [ch, n] of counts) {
      expect(Math.abs(n - expected) / expected, `symbol ${ch}: ${n} vs ${expected.toFixed(0)}`).toBeLessThan(0.05);
      chi2 += (n - expected) ** 2 / expected;
    }
    // 35 degrees of freedom: mean 35; p(chi2 > 100) is about 1e-8. Modulo bias (A-D 8/256 vs 7/256) gives thousands.
    expect(chi2).toBeLessThan(100);
  });

  it("drops bytes at or above 252 (rejection sampling) and maps the rest modulo 36", () => {
    const asked: number[] = [];
    const feed = [252, 253, 254, 255, 0, 35, 36, 251, 71, 72, 1, 2];
    const code = generateCode((n) => {
      asked.push(n);
      return Buffer.from(feed);
    });
    // 0→A, 35→9, 36→A, 251 (=6·36+35)→9, 71→9, 72→A; 252…255 skipped
    expect(code).toBe("A9A99A");
    expect(asked).toEqual([12]);
  });

  it("draws again until it has 6 accepted symbols", () => {
    const batches = [
      Buffer.alloc(12, 255),
      Buffer.from([0, 1, 252, 2, 255, 255, 255, 255, 255, 255, 255, 255]),
      Buffer.from([3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]),
    ];
    let calls = 0;
    const code = generateCode(() => batches[calls++]);
    expect(code).toBe("ABCDEF");
    expect(calls).toBe(3);
  });
});

describe("codeHmac / codeMatches", () => {
  const key = randomBytes(32).toString("base64");
  const id = "ver_01JABCDEFGHJKMNPQRSTVWXYZ0";
  const stored = codeHmac(key, id, "K7Q2ZP");

  it("stores an HMAC, never the code", () => {
    expect(stored).toMatch(/^[0-9a-f]{64}$/);
    expect(stored).not.toContain("K7Q2ZP");
  });

  it("matches the right code, case-insensitively", () => {
    expect(codeMatches(key, id, "K7Q2ZP", stored)).toBe(true);
    expect(codeMatches(key, id, "k7q2zp", stored)).toBe(true);
  });

  it("refuses a wrong code, another verification's code, another key's HMAC", () => {
    expect(codeMatches(key, id, "K7Q2ZQ", stored)).toBe(false);
    expect(codeMatches(key, "ver_01JABCDEFGHJKMNPQRSTVWXYZ1", "K7Q2ZP", stored)).toBe(false);
    expect(codeMatches(randomBytes(32).toString("base64"), id, "K7Q2ZP", stored)).toBe(false);
  });

  it("answers false, without throwing, for a stored value of another length or an empty one", () => {
    expect(codeMatches(key, id, "K7Q2ZP", stored.slice(0, 62))).toBe(false);
    expect(codeMatches(key, id, "K7Q2ZP", "")).toBe(false);
    expect(codeMatches(key, id, "K7Q2ZP", "zz-not-hex")).toBe(false);
  });
});

describe("nonce and publicToken", () => {
  it("nonce is 16 alphanumerics (EIP-4361 asks for at least 8)", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const n = nonce();
      expect(n).toMatch(/^[A-Za-z0-9]{16}$/);
      seen.add(n);
    }
    expect(seen.size).toBe(200);
  });

  it("publicToken is 32 random bytes in base64url", () => {
    const t = publicToken();
    expect(t).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(t, "base64url")).toHaveLength(32);
    expect(publicToken()).not.toBe(t);
  });
});
