// Verified users (B2B): GET /api/v1/verifications/users groups a tenant's verified verifications by
// external_user_id (newest activity first, masked identifiers, spec pagination), and
// /users/:externalUserId shows one user with status, has_proof and proof expiry of each
// verification, revoked ones included. Tenants and environments never see each other's users.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { api, startStack, type Stack, type TenantKeys } from "../support/stack.ts";
import { expectError } from "../support/expect-error.ts";

let stack: Stack;
let A: TenantKeys;
let B: TenantKeys;
let aTest: ReturnType<typeof api>;
let aLive: ReturnType<typeof api>;
let bTest: ReturnType<typeof api>;

const BOB = "bob/42@corp"; // path-unsafe characters: the client URL-encodes it
const v: Record<string, any> = {};
const tick = () => new Promise((r) => setTimeout(r, 5)); // distinct verified_at values

async function verified(client: ReturnType<typeof api>, body: Record<string, unknown>) {
  const c = await client.post("/api/v1/verifications", body);
  expect(c.status, c.text).toBe(201);
  const t = await client.post(`/api/v1/verifications/${c.body.id}/test-verify`);
  expect(t.status, t.text).toBe(200);
  await tick();
  return (await client.get(`/api/v1/verifications/${c.body.id}`)).body;
}

beforeAll(async () => {
  stack = await startStack();
  [A, B] = await Promise.all([stack.tenant("Tenant A"), stack.tenant("Tenant B")]);
  aTest = api(stack.url, A.testKey);
  aLive = api(stack.url, A.liveKey);
  bTest = api(stack.url, B.testKey);

  v.alicePhone = await verified(aTest, { type: "phone", channel: "telegram", identifier: "+37069199199", external_user_id: "alice" });
  v.aliceEmail = await verified(aTest, { type: "email", channel: "email", identifier: "john.doe@example.com", external_user_id: "alice" });
  v.aliceRevoked = await verified(aTest, { type: "phone", channel: "telegram", identifier: "+37069100003", external_user_id: "alice" });
  const revoked = await aTest.post(`/api/v1/proofs/${v.aliceRevoked.id}/revoke`, { reason: "user_request" });
  expect(revoked.status, revoked.text).toBe(200);
  const pending = await aTest.post("/api/v1/verifications", {
    type: "email",
    channel: "email",
    identifier: "alice.other@example.com",
    external_user_id: "alice",
  });
  expect(pending.status).toBe(201);
  v.noUser = await verified(aTest, { type: "phone", channel: "telegram", identifier: "+37069100004" });
  v.carol = await verified(aTest, { type: "phone", channel: "telegram", identifier: "+37069100005", external_user_id: "carol" });
  expect((await aTest.post(`/api/v1/proofs/${v.carol.id}/revoke`, { reason: "fraud" })).status).toBe(200);
  expect((await aTest.post("/api/v1/verifications", { type: "phone", channel: "sms", identifier: "+37069100006", external_user_id: "dave" })).status).toBe(201);
  v.bob = await verified(aTest, {
    type: "wallet",
    channel: "ethereum",
    identifier: privateKeyToAccount(generatePrivateKey()).address,
    external_user_id: BOB,
  });

  // live: alice again, with a signed wallet (test-verify is for test keys)
  const wallet = privateKeyToAccount(generatePrivateKey());
  const live = await aLive.post("/api/v1/verifications", {
    type: "wallet",
    channel: "ethereum",
    identifier: wallet.address,
    external_user_id: "alice",
  });
  expect(live.status).toBe(201);
  const signed = await aLive.post(`/api/v1/verifications/${live.body.id}/submit`, {
    signature: await wallet.signMessage({ message: live.body.challenge.message }),
  });
  expect(signed.body.status).toBe("verified");
  v.aliceLive = signed.body;

  // tenant B: its own alice
  v.bAlice = await verified(bTest, { type: "email", channel: "email", identifier: "alice@b.example", external_user_id: "alice" });
});
afterAll(() => stack?.close());

describe("GET /api/v1/verifications/users", () => {
  it("groups verified verifications by external_user_id, newest activity first, with masked identifiers", async () => {
    const r = await aTest.get("/api/v1/verifications/users");
    expect(r.status, r.text).toBe(200);
    expect(r.body.pagination).toEqual({ page: 1, limit: 20, total: 2, pages: 1, hasMore: false, has_more: false });
    // carol (only revoked), dave (only pending) and the verification without a user are not listed
    expect(r.body.data.map((u: any) => u.external_user_id)).toEqual([BOB, "alice"]);
    const alice = r.body.data[1];
    expect(alice).toEqual({
      external_user_id: "alice",
      verification_count: 2,
      types_verified: ["email", "phone"],
      verifications: [
        { id: v.aliceEmail.id, type: "email", channel: "email", identifier: "j***e@example.com", verified_at: v.aliceEmail.verified_at },
        { id: v.alicePhone.id, type: "phone", channel: "telegram", identifier: "+3706***9199", verified_at: v.alicePhone.verified_at },
      ],
      first_verified_at: v.alicePhone.verified_at,
      last_verified_at: v.aliceEmail.verified_at,
    });
    const bob = r.body.data[0];
    expect(bob.verification_count).toBe(1);
    expect(bob.types_verified).toEqual(["wallet"]);
    expect(bob.verifications[0].identifier).toBe(`${v.bob.identifier.slice(0, 4)}***${v.bob.identifier.slice(-4)}`);
    // no raw identifier anywhere in the answer
    for (const raw of ["+37069199199", "john.doe@example.com", v.bob.identifier]) expect(r.text).not.toContain(raw);
  });

  it("pages per DECISIONS.md", async () => {
    const p1 = await aTest.get("/api/v1/verifications/users?limit=1");
    expect(p1.body.data.map((u: any) => u.external_user_id)).toEqual([BOB]);
    expect(p1.body.pagination).toEqual({ page: 1, limit: 1, total: 2, pages: 2, hasMore: true, has_more: true });
    const p2 = await aTest.get("/api/v1/verifications/users?limit=1&page=2");
    expect(p2.body.data.map((u: any) => u.external_user_id)).toEqual(["alice"]);
    expect(p2.body.pagination).toEqual({ page: 2, limit: 1, total: 2, pages: 2, hasMore: false, has_more: false });
    const past = await aTest.get("/api/v1/verifications/users?limit=1&page=3");
    expect(past.body).toEqual({ data: [], pagination: { page: 3, limit: 1, total: 2, pages: 2, hasMore: false, has_more: false } });
    expectError(await aTest.get("/api/v1/verifications/users?limit=101"), 400, "validation_error");
    expectError(await aTest.get("/api/v1/verifications/users?page=0"), 400, "validation_error");
    expectError(await aTest.get("/api/v1/verifications/users?sort=name"), 400, "validation_error");
  });

  it("shows only the key's tenant and environment", async () => {
    const live = await aLive.get("/api/v1/verifications/users");
    expect(live.body.data).toHaveLength(1);
    expect(live.body.data[0]).toMatchObject({ external_user_id: "alice", verification_count: 1, types_verified: ["wallet"] });
    expect(live.body.data[0].verifications.map((x: any) => x.id)).toEqual([v.aliceLive.id]);
    const b = await bTest.get("/api/v1/verifications/users");
    expect(b.body.data.map((u: any) => [u.external_user_id, u.verifications.map((x: any) => x.id)])).toEqual([["alice", [v.bAlice.id]]]);
    expectError(await api(stack.url).get("/api/v1/verifications/users"), 401, "unauthorized");
  });
});

describe("GET /api/v1/verifications/users/:externalUserId", () => {
  it("answers the summary, and every verified and revoked verification with status, has_proof and proof expiry", async () => {
    const r = await aTest.get("/api/v1/verifications/users/alice");
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({
      external_user_id: "alice",
      verification_count: 2,
      types_verified: ["email", "phone"],
      first_verified_at: v.alicePhone.verified_at,
      last_verified_at: v.aliceEmail.verified_at,
    });
    const item = (x: any, status: string, has_proof: boolean) => ({
      id: x.id,
      type: x.type,
      channel: x.channel,
      identifier: expect.stringContaining("***"),
      verified_at: x.verified_at,
      status,
      has_proof,
      proof_expires_at: x.proof.expires_at,
      created_at: x.created_at,
    });
    expect(r.body.verifications).toEqual([item(v.aliceRevoked, "revoked", false), item(v.aliceEmail, "verified", true), item(v.alicePhone, "verified", true)]);
    expect(r.body.verifications[0].identifier).toBe("+3706***0003");
  });

  it("decodes the path segment", async () => {
    const r = await aTest.get(`/api/v1/verifications/users/${encodeURIComponent(BOB)}`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.external_user_id).toBe(BOB);
    expect(r.body.verifications.map((x: any) => x.id)).toEqual([v.bob.id]);
  });

  it("is 404 not_found for a user without a verified verification, or of another tenant or environment", async () => {
    for (const id of ["carol", "dave", "nobody"]) expectError(await aTest.get(`/api/v1/verifications/users/${id}`), 404, "not_found");
    expectError(await aLive.get(`/api/v1/verifications/users/${encodeURIComponent(BOB)}`), 404, "not_found");
    expectError(await bTest.get(`/api/v1/verifications/users/${encodeURIComponent(BOB)}`), 404, "not_found");
    // B's alice is B's: A's detail never lists it, nor the live one
    const a = await aTest.get("/api/v1/verifications/users/alice");
    expect(a.body.verifications.map((x: any) => x.id)).not.toContain(v.bAlice.id);
    expect(a.body.verifications.map((x: any) => x.id)).not.toContain(v.aliceLive.id);
  });

  it("leaves /verifications/{id} to verification ids", async () => {
    const r = await aTest.get(`/api/v1/verifications/${v.alicePhone.id}`);
    expect(r.status).toBe(200);
    expect(r.body.id).toBe(v.alicePhone.id);
  });

  it("is documented in the OpenAPI document (no longer planned)", async () => {
    const doc = (await api(stack.url).get("/api/openapi.json")).body;
    for (const p of ["/api/v1/verifications/users", "/api/v1/verifications/users/{externalUserId}"]) {
      expect(doc.paths[p].get.summary).not.toMatch(/planned/);
      expect(doc.paths[p].get.description).toMatch(/revoked/);
    }
  });
});

// Postgres only: the stack's database is reachable by URL (PGlite's is held by the service in this
// process; services/verification/test/verified-users.test.ts measures PGlite at the service).
describe.runIf(process.env.DATABASE_URL)("on 100 000 verifications (Postgres)", () => {
  it("lists and details through the gateway within 1 s", async () => {
    const C = await stack.tenant("Tenant C");
    const c = api(stack.url, C.testKey);
    const db = new pg.Client({ connectionString: stack.env.DATABASE_URL });
    await db.connect();
    try {
      // 100 000 rows over 20 000 users (every 20th without one): 80% verified, 10% revoked, 10% pending
      await db.query(
        `INSERT INTO verification.verifications (id, tenant_id, environment, type, channel, identifier, identifier_canonical, status,
           challenge_expires_at, instruction, proof_expires_in, proof_token, proof_expires_at, created_at, updated_at, verified_at, revoked_at,
           external_user_id)
         SELECT 'ver_seed' || lpad(g::text, 8, '0'), $1, 'test', (ARRAY['phone','email','wallet','social'])[1 + g % 4],
                (ARRAY['telegram','email','ethereum','github'])[1 + g % 4], 'seeded-identifier-' || g, 'seeded-identifier-' || g, s.status,
                now() - interval '2 days' + g * interval '1 second', 'seeded', 86400,
                CASE WHEN s.status <> 'pending' THEN 'token-' || g END,
                CASE WHEN s.status <> 'pending' THEN now() + interval '1 day' END,
                now() - interval '2 days' + g * interval '1 second', now() - interval '2 days' + g * interval '1 second',
                CASE WHEN s.status <> 'pending' THEN now() - interval '2 days' + g * interval '1 second' END,
                CASE WHEN s.status = 'revoked' THEN now() - interval '2 days' + g * interval '1 second' END,
                CASE WHEN g % 20 <> 0 THEN 'user-' || (g % 20000) END
           FROM generate_series(1, 100000) g,
                LATERAL (SELECT CASE WHEN g % 10 = 1 THEN 'revoked' WHEN g % 10 = 2 THEN 'pending' ELSE 'verified' END AS status) s`,
        [C.tenantId],
      );
    } finally {
      await db.end();
    }
    const time = async (p: string) => {
      let best = Infinity;
      let res!: Awaited<ReturnType<typeof c.get>>;
      for (let i = 0; i < 3; i++) {
        const start = performance.now();
        res = await c.get(p);
        best = Math.min(best, performance.now() - start);
        expect(res.status, res.text).toBe(200);
      }
      return { ms: best, res };
    };
    const list = await time("/api/v1/verifications/users?limit=100");
    const deep = await time("/api/v1/verifications/users?limit=100&page=150");
    const one = await time("/api/v1/verifications/users/user-13");
    console.log(`[verified-users] gateway on pg: list ${list.ms.toFixed(1)} ms, page 150 ${deep.ms.toFixed(1)} ms, detail ${one.ms.toFixed(1)} ms`);
    expect(list.res.body.pagination).toEqual({ page: 1, limit: 100, total: 15_000, pages: 150, hasMore: true, has_more: true });
    expect(list.res.body.data[0].external_user_id).toBe("user-19999");
    expect(deep.res.body.data).toHaveLength(100);
    expect(one.res.body.verification_count).toBe(5);
    expect(list.ms).toBeLessThan(1_000);
    expect(deep.ms).toBeLessThan(1_000);
    expect(one.ms).toBeLessThan(1_000);
  });
});
