// The console's overview counts and search by identifier (GetVerificationStats,
// SearchVerifications) on a database seeded with 100 000 verifications of one scope over 30 days,
// plus another tenant's and the live environment's: exact counts per status, channel and bucket,
// grouped in SQL within a bound; the search matches the identifier as typed (normalized), answers
// it masked, and never crosses tenants or environments (PGlite by default, Postgres with DATABASE_URL).
import path from "node:path";
import { fileURLToPath } from "node:url";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ConnectError, createClient, createRouterTransport, type Client, type Interceptor } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { VerificationService } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import { iso, migrate, openDatabase, PersonalData, readMigrations, toConnectError, type SealingDatabase } from "@icv/platform";
import { freshPostgres, type FreshPostgres } from "../../../test/support/fresh-postgres.ts";
import { insightHandlers } from "../src/rpc/insights.ts";
import { verificationRoutes } from "../src/rpc/verifications.ts";
import { VerificationStore } from "../src/store/verifications.ts";
import { sealVerification, verificationDatabase } from "../src/store/sealing.ts";
import type { UseCaseDeps } from "../src/verifications/deps.ts";

const MIGRATIONS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../migrations");
const NOW = new Date("2026-03-31T12:30:00.000Z");
const HOUR = 3600_000;
const N = 100_000;
const STATUSES = ["verified", "failed", "expired", "pending", "revoked"];
const CHANNELS = ["email", "sms", "telegram", "github"];
const TYPES = ["email", "phone", "phone", "social"];

describe("the console's counts and search on 100 000 verifications", () => {
  const scope = { tenantId: "ten_console", environment: Environment.TEST };
  let pgFresh: FreshPostgres | undefined;
  let db: SealingDatabase;
  let client: Client<typeof VerificationService>;

  beforeAll(async () => {
    pgFresh = process.env.DATABASE_URL ? await freshPostgres(process.env.DATABASE_URL) : undefined;
    // identifiers sealed as the service stores them: the search can only compare blind indexes
    const pd = PersonalData.ephemeral();
    db = verificationDatabase(await openDatabase(pgFresh ? { url: pgFresh.url, poolMax: 2 } : { dataDir: "memory://" }), pd);
    await migrate(db, "verification", readMigrations(MIGRATIONS));
    // row g: created g × 25 s before NOW (so 100 000 rows span ~29 days), status g mod 5, channel g mod 4
    const seed = (tenantId: string, env: string, count: number, prefix: string) =>
      db.query(
        `INSERT INTO verification.verifications (id, tenant_id, environment, type, channel, identifier, identifier_canonical, status,
           challenge_expires_at, instruction, proof_expires_in, created_at, updated_at)
         SELECT $3 || lpad(g::text, 8, '0'), $1, $2, ($6::text[])[1 + g % 4], ($7::text[])[1 + g % 4], 'seeded-' || g, 'seeded-' || g,
                ($8::text[])[1 + g % 5], $5::timestamptz, 'seeded', 3600,
                $5::timestamptz - g * interval '25 seconds', $5::timestamptz - g * interval '25 seconds'
           FROM generate_series(1, $4::int) g`,
        [tenantId, env, prefix, count, NOW, TYPES, CHANNELS, STATUSES],
      );
    await seed(scope.tenantId, "test", N, "vrf_main");
    await seed("ten_other", "test", 10_000, "vrf_other");
    await seed(scope.tenantId, "live", 10_000, "vrf_live");
    // a person's identifiers, as the service stores them once normalized (sealed, with their blind index)
    const person = (id: string, tenantId: string, env: string, type: string, channel: string, identifier: string, minutesAgo: number) => {
      const sealed = sealVerification(pd, {
        id,
        type,
        identifier,
        identifier_canonical: identifier,
        instruction: "seeded",
        challenge_message: null,
        client_metadata: null,
      });
      return db.query(
        `INSERT INTO verification.verifications (id, tenant_id, environment, type, channel, identifier, identifier_canonical, identifier_index,
           key_version, status, challenge_expires_at, instruction, proof_expires_in, created_at, updated_at, external_user_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'verified', $10, $11, 3600, $10, $10, 'user-7')`,
        [
          id,
          tenantId,
          env,
          type,
          channel,
          sealed.identifier,
          sealed.identifier_canonical,
          sealed.identifier_index,
          sealed.key_version,
          new Date(NOW.getTime() - minutesAgo * 60_000),
          sealed.instruction,
        ],
      );
    };
    await person("ver_jo1", scope.tenantId, "test", "email", "email", "jo@example.com", 5);
    await person("ver_jo2", scope.tenantId, "test", "email", "email", "jo@example.com", 3);
    await person("ver_ph1", scope.tenantId, "test", "phone", "sms", "+37069199199", 4);
    await person("ver_jo_other", "ten_other", "test", "email", "email", "jo@example.com", 2);
    await person("ver_jo_live", scope.tenantId, "live", "email", "email", "jo@example.com", 2);
    const routes = verificationRoutes(
      {} as UseCaseDeps,
      new VerificationStore(db),
      { now: () => NOW },
      undefined,
      undefined,
      insightHandlers(db, { now: () => NOW }),
    );
    const mapErrors: Interceptor = (next) => (r) => next(r).catch((e: unknown) => Promise.reject(toConnectError(e)));
    client = createClient(VerificationService, createRouterTransport(routes, { router: { interceptors: [mapErrors] } }));
  }, 120_000);
  afterAll(async () => {
    await db?.close();
    await pgFresh?.drop();
  });

  /** Best of 3 runs, in ms. */
  async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; result: T }> {
    let best = Infinity;
    let result!: T;
    for (let i = 0; i < 3; i++) {
      const start = performance.now();
      result = await fn();
      best = Math.min(best, performance.now() - start);
    }
    return { ms: best, result };
  }
  const bound = () => (db.kind === "pg" ? 1_000 : 5_000);
  /** The seeded rows g = 1 … N created at or after `since`, with the three persons' rows (all within the last hour). */
  const seededSince = (since: Date) => Array.from({ length: N }, (_, i) => i + 1).filter((g) => NOW.getTime() - g * 25_000 >= since.getTime());

  it("counts the last 24 hours by status, channel and hour: exact, every hour present, within the bound", async () => {
    const since = new Date(NOW.getTime() - 24 * HOUR);
    const { ms, result: r } = await timed(() => client.getVerificationStats({ scope, since: timestampFromDate(since), bucket: "hour" }));
    console.log(`[console-stats] ${db.kind}: 24 h by hour ${ms.toFixed(1)} ms`);
    expect(ms).toBeLessThan(bound());
    const gs = seededSince(since);
    expect(r.total).toBe(gs.length + 3);
    const verified = gs.filter((g) => g % 5 === 0).length + 3;
    expect(r.byStatus.find((s) => s.key === "verified")?.count).toBe(verified);
    expect(r.byStatus.map((s) => s.key).sort()).toEqual([...STATUSES].sort());
    expect(r.byChannel.find((c) => c.key === "github")?.count).toBe(gs.filter((g) => g % 4 === 3).length);
    expect(r.byChannel.find((c) => c.key === "sms")?.count).toBe(gs.filter((g) => g % 4 === 1).length + 1);
    // 12:00 yesterday … 12:00 today: 25 hours, oldest first, each one's counts adding up to the total
    expect(r.buckets).toHaveLength(25);
    expect(iso(r.buckets[0].start)).toBe("2026-03-30T12:00:00.000Z");
    expect(iso(r.buckets.at(-1)!.start)).toBe("2026-03-31T12:00:00.000Z");
    const sum = r.buckets.flatMap((b) => b.byStatus).reduce((n, c) => n + c.count, 0);
    expect(sum).toBe(r.total);
    // the current hour (12:00–12:30): rows g = 1 … 72, and the three persons
    expect(r.buckets.at(-1)!.byStatus.reduce((n, c) => n + c.count, 0)).toBe(72 + 3);
  });

  it("counts 30 days by day, and refuses a window over 31 days or another bucket", async () => {
    const since = new Date(NOW.getTime() - 30 * 24 * HOUR);
    const { ms, result: r } = await timed(() => client.getVerificationStats({ scope, since: timestampFromDate(since), bucket: "day" }));
    console.log(`[console-stats] ${db.kind}: 30 days by day ${ms.toFixed(1)} ms`);
    expect(ms).toBeLessThan(bound());
    // every seeded row of this scope, none of the other tenant's or of live
    expect(r.total).toBe(N + 3);
    expect(r.buckets).toHaveLength(31);
    expect(iso(r.buckets[0].start)).toBe("2026-03-01T00:00:00.000Z");
    const err = (p: Promise<unknown>) =>
      p.then(
        () => undefined,
        (e: unknown) => ConnectError.from(e).rawMessage,
      );
    expect(await err(client.getVerificationStats({ scope, since: timestampFromDate(new Date(NOW.getTime() - 32 * 24 * HOUR)), bucket: "day" }))).toMatch(
      /at most 31 days/,
    );
    expect(await err(client.getVerificationStats({ scope, since: timestampFromDate(since), bucket: "minute" }))).toMatch(/hour or day/);
    expect(await err(client.getVerificationStats({ scope, bucket: "day" }))).toMatch(/since must be set/);
  });

  it("finds an identifier as typed, answers it masked, newest first, only in its own tenant and environment", async () => {
    const { ms, result: r } = await timed(() => client.searchVerifications({ scope, identifier: "  Jo@Example.com ", page: { page: 1, limit: 20 } }));
    console.log(`[console-search] ${db.kind}: by identifier ${ms.toFixed(1)} ms`);
    expect(ms).toBeLessThan(bound());
    expect(r.verifications.map((v) => v.id)).toEqual(["ver_jo2", "ver_jo1"]);
    expect(r.verifications[0]).toMatchObject({ type: "email", channel: "email", status: "verified", externalUserId: "user-7" });
    expect(r.verifications[0].maskedIdentifier).not.toContain("jo@example.com");
    expect(r.verifications[0].maskedIdentifier).toContain("***");
    expect(r.pageInfo).toMatchObject({ total: 2, page: 1 });
    // a phone typed another way, by its type
    const phone = await client.searchVerifications({ scope, identifier: "+370 691 99199", type: "phone" });
    expect(phone.verifications.map((v) => [v.id, v.maskedIdentifier])).toEqual([["ver_ph1", "+3706***9199"]]);
    // the live environment and the other tenant hold their own
    const live = await client.searchVerifications({ scope: { ...scope, environment: Environment.LIVE }, identifier: "jo@example.com" });
    expect(live.verifications.map((v) => v.id)).toEqual(["ver_jo_live"]);
    expect((await client.searchVerifications({ scope, identifier: "nobody@example.com" })).verifications).toEqual([]);
    const err = (p: Promise<unknown>) =>
      p.then(
        () => undefined,
        (e: unknown) => ConnectError.from(e).rawMessage,
      );
    expect(await err(client.searchVerifications({ scope, identifier: "" }))).toMatch(/1 to 320/);
    expect(await err(client.searchVerifications({ scope, identifier: "x".repeat(321) }))).toMatch(/1 to 320/);
    expect(await err(client.searchVerifications({ scope, identifier: "jo@example.com", type: "nonsense" }))).toMatch(/unknown type/);
  });
});
