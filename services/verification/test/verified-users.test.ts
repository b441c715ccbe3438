// Verified users computed in SQL: the RPCs on a database seeded with 100 000 verifications by
// generate_series answer within a bound (PGlite by default, Postgres with DATABASE_URL), and the
// row → message shaping groups and masks.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createClient, createRouterTransport, type Client, type Interceptor } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { VerificationService } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import { fromConnectError, iso, migrate, openDatabase, readMigrations, toConnectError, type Database } from "@icv/platform";
import { freshPostgres, type FreshPostgres } from "../../../test/support/fresh-postgres.ts";
import { verificationRoutes } from "../src/rpc/verifications.ts";
import { VerificationStore } from "../src/store/verifications.ts";
import { toVerifiedUsers } from "../src/rpc/verified-users.ts";
import type { UseCaseDeps } from "../src/verifications/deps.ts";

const MIGRATIONS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../migrations");
const T0 = new Date("2026-01-01T00:00:00.000Z");

describe("toVerifiedUsers", () => {
  it("keeps the summaries' order, attaches each user's verifications in row order, masks identifiers", () => {
    const at = (s: number) => new Date(T0.getTime() + s * 1000);
    const summaries = [
      { external_user_id: "u2", verification_count: 1, types_verified: ["email"], first_verified_at: at(5), last_verified_at: at(5) },
      { external_user_id: "u1", verification_count: 1, types_verified: ["phone"], first_verified_at: at(1), last_verified_at: at(1) },
    ];
    const row = (id: string, user: string, type: string, identifier: string, status: string, s: number) => ({
      id,
      external_user_id: user,
      type,
      channel: type === "phone" ? "telegram" : "email",
      identifier,
      status,
      verified_at: at(s),
      created_at: at(s - 1),
      proof_expires_at: at(s + 60),
      has_proof: status === "verified",
    });
    const users = toVerifiedUsers(summaries, [
      row("v3", "u2", "email", "john.doe@example.com", "verified", 5),
      row("v2", "u1", "phone", "+37069199199", "revoked", 3),
      row("v1", "u1", "phone", "+37069199199", "verified", 1),
    ]);
    expect(users.map((u) => u.externalUserId)).toEqual(["u2", "u1"]);
    expect(users[0].verifications.map((v) => [v.id, v.identifier, v.hasProof])).toEqual([["v3", "j***e@example.com", true]]);
    expect(users[1].verifications.map((v) => [v.id, v.identifier, v.status])).toEqual([
      ["v2", "+3706***9199", "revoked"],
      ["v1", "+3706***9199", "verified"],
    ]);
    expect(iso(users[1].firstVerifiedAt)).toBe(at(1).toISOString());
  });
});

describe("verified users on 100 000 verifications", () => {
  const N = 100_000;
  const USERS = 20_000;
  const tenant = "ten_perf";
  const scope = { tenantId: tenant, environment: Environment.TEST };
  let pgFresh: FreshPostgres | undefined;
  let db: Database;
  let client: Client<typeof VerificationService>;

  beforeAll(async () => {
    pgFresh = process.env.DATABASE_URL ? await freshPostgres(process.env.DATABASE_URL) : undefined;
    db = await openDatabase(pgFresh ? { url: pgFresh.url, poolMax: 2 } : { dataDir: "memory://" });
    await migrate(db, "verification", readMigrations(MIGRATIONS));
    // tenant ten_perf/test: N verifications over USERS external users (every 20th without one);
    // 80% verified, 10% revoked, 10% pending. Plus 10 000 of another tenant and of live.
    const seed = (tenantId: string, env: string, count: number, prefix: string) =>
      db.query(
        `INSERT INTO verification.verifications (id, tenant_id, environment, type, channel, identifier, identifier_canonical, status,
           challenge_expires_at, instruction, proof_expires_in, proof_token, proof_expires_at, created_at, updated_at, verified_at, revoked_at,
           external_user_id)
         SELECT $3 || lpad(g::text, 8, '0'), $1, $2, (ARRAY['phone','email','wallet','social'])[1 + g % 4],
                (ARRAY['telegram','email','ethereum','github'])[1 + g % 4], 'seeded-identifier-' || g, 'seeded-identifier-' || g, s.status,
                $5::timestamptz + g * interval '1 second', 'seeded', 3600,
                CASE WHEN s.status <> 'pending' THEN 'token-' || g END,
                CASE WHEN s.status <> 'pending' THEN $5::timestamptz + g * interval '1 second' + interval '1 hour' END,
                $5::timestamptz + g * interval '1 second', $5::timestamptz + g * interval '1 second',
                CASE WHEN s.status <> 'pending' THEN $5::timestamptz + g * interval '1 second' END,
                CASE WHEN s.status = 'revoked' THEN $5::timestamptz + g * interval '1 second' END,
                CASE WHEN g % 20 <> 0 THEN 'user-' || (g % $6::int) END
           FROM generate_series(1, $4::int) g,
                LATERAL (SELECT CASE WHEN g % 10 = 1 THEN 'revoked' WHEN g % 10 = 2 THEN 'pending' ELSE 'verified' END AS status) s`,
        [tenantId, env, prefix, count, T0, USERS],
      );
    await seed(tenant, "test", N, "vrf_perf");
    await seed("ten_other", "test", 10_000, "vrf_other");
    await seed(tenant, "live", 10_000, "vrf_live");
    const verifications = {} as UseCaseDeps; // the verified-user RPCs only read the store
    const routes = verificationRoutes(verifications, new VerificationStore(db), { now: () => T0 });
    // AppError → Connect error, as the service host does
    const mapErrors: Interceptor = (next) => (r) => next(r).catch((e: unknown) => Promise.reject(toConnectError(e)));
    const interceptors = [mapErrors];
    client = createClient(VerificationService, createRouterTransport(routes, { router: { interceptors } }));
  });
  afterAll(async () => {
    await db?.close();
    await pgFresh?.drop();
  });

  /** Best of 3 runs, in ms (the first run also plans and warms the cache). */
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

  it("lists a page of users with counts, total and newest activity first, within the bound", async () => {
    const first = await timed(() => client.listVerifiedUsers({ scope, page: { page: 1, limit: 100 } }));
    const deep = await timed(() => client.listVerifiedUsers({ scope, page: { page: 150, limit: 100 } }));
    console.log(`[verified-users] ${db.kind}: list page 1 (100 users) ${first.ms.toFixed(1)} ms, page 150 ${deep.ms.toFixed(1)} ms`);
    expect(first.ms).toBeLessThan(bound());
    expect(deep.ms).toBeLessThan(bound());

    const r = first.result;
    // user-k holds g ≡ k (mod 20000); listed when those are verified (k mod 10 ∉ {1, 2}) and carry a user (k mod 20 ≠ 0)
    const listed = Array.from({ length: USERS }, (_, k) => k).filter((k) => k % 10 !== 1 && k % 10 !== 2 && k % 20 !== 0).length;
    expect(r.pageInfo).toMatchObject({ page: 1, limit: 100, total: listed, pages: Math.ceil(listed / 100), hasMore: true });
    expect(r.users).toHaveLength(100);
    const last = r.users.map((u) => iso(u.lastVerifiedAt)!);
    expect([...last].sort().reverse()).toEqual(last);
    // the newest verified row is g = 99 999 (g = 100 000 has no external user; 99 991 is revoked)
    expect(r.users[0].externalUserId).toBe(`user-${99_999 % USERS}`);
    // user-k: its 5 rows share one status, all verified here
    for (const u of r.users) {
      const k = Number(u.externalUserId.slice(5));
      const gs = [0, 1, 2, 3, 4].map((i) => k + i * USERS).filter((g) => g >= 1 && g <= N && g % 20 !== 0 && g % 10 !== 1 && g % 10 !== 2);
      expect(u.verificationCount).toBe(gs.length);
      expect(u.verifications.map((v) => v.id).sort()).toEqual(gs.map((g) => `vrf_perf${String(g).padStart(8, "0")}`).sort());
      expect(u.verifications.every((v) => v.status === "verified" && v.identifier.includes("***"))).toBe(true);
    }
    expect(deep.result.users).toHaveLength(100);
  });

  it("answers one user within the bound, and not_found for a user with no verified verification", async () => {
    const one = await timed(() => client.getVerifiedUser({ scope, externalUserId: "user-13" }));
    console.log(`[verified-users] ${db.kind}: detail ${one.ms.toFixed(1)} ms`);
    expect(one.ms).toBeLessThan(bound());
    // user-13 holds g = 13, 20013, 40013, 60013, 80013, all verified
    const u = one.result.user!;
    expect(u.verificationCount).toBe(5);
    expect(u.verifications.map((v) => v.id)).toEqual([80013, 60013, 40013, 20013, 13].map((g) => `vrf_perf${String(g).padStart(8, "0")}`));
    // proofs expire an hour after g seconds past T0, and the clock says T0
    expect(u.verifications.every((v) => v.hasProof)).toBe(true);
    const code = (id: string) =>
      client.getVerifiedUser({ scope, externalUserId: id }).then(
        () => "found",
        (e: unknown) => fromConnectError(e).code,
      );
    // user-11: only revoked ones; user-12: only pending ones; and one nobody used
    expect(await code("user-11")).toBe("not_found");
    expect(await code("user-12")).toBe("not_found");
    expect(await code("nobody")).toBe("not_found");
    // another environment of the same tenant does not see test's users
    const live = await client.getVerifiedUser({ scope: { ...scope, environment: Environment.LIVE }, externalUserId: "user-13" });
    expect(live.user!.verifications.map((v) => v.id)).toEqual(["vrf_live00000013"]);
  });
});
