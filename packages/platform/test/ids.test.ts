import { decodeTime } from "ulid";
import { describe, expect, it } from "vitest";
import { ID_PREFIXES, isId, newId, type IdKind } from "../src/ids.ts";

// DECISIONS.md "Identifiers and shapes" (tmsg_: test-mode messages, which DECISIONS does not name)
const PREFIXES: Record<IdKind, string> = {
  verification: "ver",
  verificationRequest: "vreq",
  session: "sess",
  authSession: "auth",
  webhookDelivery: "whd",
  tenant: "ten",
  apiKey: "key",
  event: "evt",
  testMessage: "tmsg",
  project: "prj",
  profile: "prf", // DECISIONS "Projects, message templates and profiles"
  consoleUser: "cu", // the tenant console's people and audit entries (DECISIONS "Tenant console")
  consoleAudit: "aud",
};
const ULID = "[0-9A-HJKMNP-TV-Z]{26}";

describe("ids", () => {
  it("uses the prefixes of DECISIONS.md", () => {
    expect(ID_PREFIXES).toEqual(PREFIXES);
  });

  it.each(Object.entries(PREFIXES) as [IdKind, string][])("%s ids are %s_ + a ULID, and isId accepts them", (kind, prefix) => {
    const id = newId(kind);
    expect(id).toMatch(new RegExp(`^${prefix}_${ULID}$`));
    expect(isId(kind, id)).toBe(true);
  });

  it("carries the given time in its ULID", () => {
    // later than any id made so far in this process (the factory is monotonic, see below)
    const t = Date.now() + 60_000;
    expect(decodeTime(newId("verification", t).slice(4))).toBe(t);
  });

  it("stays increasing when asked for an earlier time than one already used (the id keeps the later time)", () => {
    const t = Date.now() + 120_000;
    const first = newId("verification", t);
    const earlier = newId("verification", t - 10_000);
    expect(earlier > first).toBe(true);
    expect(decodeTime(earlier.slice(4))).toBe(t);
  });

  it("sorts by creation: strictly increasing within one millisecond and across milliseconds", () => {
    const t = Date.now();
    const sameMs = Array.from({ length: 1000 }, () => newId("event", t));
    expect(new Set(sameMs).size).toBe(1000);
    expect([...sameMs].sort()).toEqual(sameMs);
    const later = newId("event", t + 1);
    expect(later > sameMs[sameMs.length - 1]).toBe(true);
  });

  it("draws the random part afresh for each millisecond, from all 32 characters", () => {
    const t = Date.now() + 300_000;
    const parts = Array.from({ length: 2000 }, (_, i) => newId("event", t + i).slice(14));
    expect(new Set(parts).size).toBe(parts.length);
    const counts = new Map<string, number>();
    for (const c of parts.join("")) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(32);
    // 32,000 characters: 1,000 of each expected; a skewed source would leave some far off
    for (const n of counts.values()) expect(n).toBeGreaterThan(800);
  });

  it("isId refuses other kinds, other alphabets and other lengths", () => {
    const id = newId("verification");
    expect(isId("tenant", id)).toBe(false);
    expect(isId("verification", id.toLowerCase())).toBe(false);
    expect(isId("verification", `${id}0`)).toBe(false);
    expect(isId("verification", id.slice(0, -1))).toBe(false);
    expect(isId("verification", `${id.slice(0, -1)}U`)).toBe(false); // U is not Crockford base32
    expect(isId("verification", `ver_${id}`)).toBe(false);
    expect(isId("verification", "")).toBe(false);
    expect(isId("verificationRequest", newId("verification"))).toBe(false);
  });
});
