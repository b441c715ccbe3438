// Scheduled domain re-checks (issue 27) with two replicas of the verification service sweeping at
// once over one database (on Postgres with DATABASE_URL: two connection pools, the claims truly
// concurrent; on PGlite the one embedded database). Every due proof is checked exactly once per
// due time and never by both replicas at the same moment; a revoked proof leaves the schedule;
// the first due times are spread over the interval.
import type { Client } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { DomainService } from "@icv/contracts/gen/icv/domain/v1/domain_service_pb.ts";
import { createLogger, MemoryRateLimiter, migrate, openDatabase, parseConfig, readMigrations, systemClock, type Database, type Scope } from "@icv/platform";
import { freshPostgres, type FreshPostgres } from "../../../test/support/fresh-postgres.ts";
import { startTestProofService, type TestProofService } from "../../proof/test/support/proof-service.ts";
import { VerificationStore } from "../src/store/verifications.ts";
import { useCaseDeps, type UseCaseDeps } from "../src/verifications/deps.ts";
import { checkDomain, recheckDue } from "../src/verifications/domain-checks.ts";
import { createDomainVerification } from "../src/verifications/domain.ts";
import { revokeVerification } from "../src/verifications/revoke.ts";
import { SendLimits } from "../src/sending/send-limits.ts";

const MIGRATIONS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../migrations");
const scope: Scope = { tenantId: "ten_recheck", env: "live" };

let proof: TestProofService;
let pgFresh: FreshPostgres | undefined;
const dbs: Database[] = [];
const replicas: UseCaseDeps[] = [];

/** Every DNS check the replicas asked for, and how many ran at once per domain at most. */
const checks = new Map<string, number>();
const active = new Map<string, number>();
let overlap = 0;
const slow = new Set<string>();

const domains = {
  detectProvider: async () => ({ detected: "unknown", name: "Unknown", nameServers: [] }),
  async checkDns(req: { domain: string }) {
    const now = (active.get(req.domain) ?? 0) + 1;
    active.set(req.domain, now);
    if (now > 1) overlap++;
    checks.set(req.domain, (checks.get(req.domain) ?? 0) + 1);
    // a check takes a while (the name servers' round trips): room for the other replica to collide
    await new Promise((r) => setTimeout(r, slow.has(req.domain) ? 400 : 20));
    active.set(req.domain, now - 1);
    return { result: { passed: true, reason: "", summary: "found", observations: [], checkedAt: undefined } };
  },
} as unknown as Client<typeof DomainService>;

beforeAll(async () => {
  proof = await startTestProofService();
  pgFresh = process.env.DATABASE_URL ? await freshPostgres(process.env.DATABASE_URL) : undefined;
  const first = await openDatabase(pgFresh ? { url: pgFresh.url, poolMax: 4 } : { dataDir: "memory://" });
  await migrate(first, "verification", readMigrations(MIGRATIONS));
  dbs.push(first);
  // the second replica has its own pool on Postgres; PGlite is one embedded database, shared
  dbs.push(pgFresh ? await openDatabase({ url: pgFresh.url, poolMax: 4 }) : first);
  for (const db of dbs) {
    replicas.push(
      useCaseDeps({
        store: new VerificationStore(db),
        proofs: proof.client,
        domains,
        config: parseConfig({ RECHECK_MIN_INTERVAL_S: "1", RECHECK_BATCH: "7" }),
        clock: systemClock,
        hmacKey: "k".repeat(32),
        logger: createLogger({ level: "silent" }),
        sendLimits: new SendLimits({ limiter: new MemoryRateLimiter(), keySecret: "k".repeat(32), budgetPerHour: 1000 }),
      }),
    );
  }
});
afterAll(async () => {
  for (const db of new Set(dbs)) await db.close();
  await pgFresh?.drop();
  await proof?.close();
});

describe(`scheduled re-checks with two replicas (${process.env.DATABASE_URL ? "Postgres" : "PGlite"})`, () => {
  it("check every due proof exactly once, never both at once; a revoked proof leaves the schedule; first due times spread over the interval", async () => {
    const [a, b] = replicas;
    const ids: string[] = [];
    const dues: number[] = [];
    for (let i = 0; i < 30; i++) {
      const d = await createDomainVerification(a, scope, { domain: `sweep${i}.example.com`, recheckInterval: 2 });
      const before = Date.now();
      const done = await checkDomain(a, scope, d.row.id);
      const after = Date.now();
      expect(done.row.status).toBe("verified");
      expect(done.state.next_recheck_at).toBeInstanceOf(Date);
      const due = done.state.next_recheck_at!.getTime();
      // within one interval of the check
      expect(due).toBeGreaterThan(before);
      expect(due).toBeLessThanOrEqual(after + 2_000);
      dues.push(due - after);
      ids.push(d.row.id);
    }
    // spread over the interval, not all at its end
    expect(new Set(dues.map((ms) => Math.floor(ms / 500))).size).toBeGreaterThan(1);
    await revokeVerification(a, scope, ids[0], "asset_transferred");
    checks.clear();

    await new Promise((r) => setTimeout(r, 2_100));
    let claimed = 0;
    for (let round = 0; round < 20; round++) {
      const n = (await Promise.all([recheckDue(a), recheckDue(b), recheckDue(a), recheckDue(b)])).reduce((x, y) => x + y, 0);
      claimed += n;
      if (!n) break;
    }
    expect(overlap).toBe(0);
    expect(claimed).toBe(29);
    expect(checks.has("sweep0.example.com")).toBe(false);
    for (let i = 1; i < 30; i++) expect(checks.get(`sweep${i}.example.com`), `sweep${i}`).toBe(1);
    // each re-check counted once, marked as scheduled, and the next one is due an interval later
    const state = await a.store.checks.get(scope, ids[1]);
    expect(state).toMatchObject({ check_count: 2, last_check: { passed: true, scheduled: true } });
    expect(state!.next_recheck_at!.getTime()).toBeGreaterThan(Date.now());
    expect((await a.store.checks.get(scope, ids[0]))!.next_recheck_at).toBeNull();
  });

  it("a check by a call holds the sweeper off that proof while it runs", async () => {
    const [a, b] = replicas;
    const d = await createDomainVerification(a, scope, { domain: "held.example.com", recheckInterval: 1 });
    await checkDomain(a, scope, d.row.id);
    // due, and the 5 s gap between two checks by calls is past
    await new Promise((r) => setTimeout(r, 5_100));
    slow.add("held.example.com");
    checks.delete("held.example.com");
    const call = checkDomain(a, scope, d.row.id);
    await new Promise((r) => setTimeout(r, 100));
    await recheckDue(b);
    await call;
    expect(checks.get("held.example.com")).toBe(1);
    expect(overlap).toBe(0);
    const state = await a.store.checks.get(scope, d.row.id);
    expect(state!.next_recheck_at!.getTime() - Date.now()).toBeLessThan(2_000);
  });
});
