// Tenants and environments are walled off from each other: another tenant's or environment's
// verification answers 404 not_found on every keyed endpoint (never 403), lists show only the
// caller's own rows, and yet any tenant can validate any proof (proofs are portable).
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
let bLive: ReturnType<typeof api>;

/** A's verifications: a verified test one (with proof), a pending test one, a verified live one (wallet, no provider needed). */
const ids = { testVerified: "", testPending: "", liveVerified: "", livePending: "" };
let testProof = "";
let liveProof = "";

beforeAll(async () => {
  stack = await startStack();
  [A, B] = await Promise.all([stack.tenant("Tenant A"), stack.tenant("Tenant B")]);
  aTest = api(stack.url, A.testKey);
  aLive = api(stack.url, A.liveKey);
  bTest = api(stack.url, B.testKey);
  bLive = api(stack.url, B.liveKey);

  const v1 = await aTest.post("/api/v1/verifications", { type: "phone", channel: "telegram", identifier: "+37069100001" });
  expect(v1.status).toBe(201);
  const tv = await aTest.post(`/api/v1/verifications/${v1.body.id}/test-verify`);
  expect(tv.status).toBe(200);
  ids.testVerified = v1.body.id;
  testProof = tv.body.proof_token;

  const v2 = await aTest.post("/api/v1/verifications", { type: "phone", channel: "sms", identifier: "+37069100002" });
  expect(v2.status).toBe(201);
  ids.testPending = v2.body.id;

  const wallet = privateKeyToAccount(generatePrivateKey());
  const v3 = await aLive.post("/api/v1/verifications", { type: "wallet", channel: "ethereum", identifier: wallet.address });
  expect(v3.status).toBe(201);
  const signed = await aLive.post(`/api/v1/verifications/${v3.body.id}/submit`, {
    signature: await wallet.signMessage({ message: v3.body.challenge.message }),
  });
  expect(signed.status).toBe(200);
  expect(signed.body.status).toBe("verified");
  ids.liveVerified = v3.body.id;
  liveProof = signed.body.proof.token;

  const v4 = await aLive.post("/api/v1/verifications", {
    type: "wallet",
    channel: "ethereum",
    identifier: privateKeyToAccount(generatePrivateKey()).address,
  });
  expect(v4.status).toBe(201);
  ids.livePending = v4.body.id;
});
afterAll(() => stack?.close());

/** Every keyed endpoint that names one verification, tried by a caller who must not see it. */
async function expectInvisible(c: ReturnType<typeof api>, id: string) {
  expectError(await c.get(`/api/v1/verifications/${id}`), 404, "not_found");
  expectError(await c.post(`/api/v1/verifications/${id}/submit`, { challenge_code: "ABC123" }), 404, "not_found");
  expectError(await c.post(`/api/v1/proofs/${id}/revoke`, { reason: "fraud" }), 404, "not_found");
  expectError(await c.get(`/api/v1/proofs/${id}/status`), 404, "not_found");
}

describe("another tenant", () => {
  it("gets 404 not_found for A's verified test verification on get, submit, test-verify, revoke and proof status", async () => {
    await expectInvisible(bTest, ids.testVerified);
    await expectInvisible(bLive, ids.testVerified);
    expectError(await bTest.post(`/api/v1/verifications/${ids.testVerified}/test-verify`), 404, "not_found");
    // nothing B tried changed A's verification or proof
    const own = await aTest.get(`/api/v1/verifications/${ids.testVerified}`);
    expect(own.body).toMatchObject({ status: "verified", attempts: 0 });
    const status = await aTest.get(`/api/v1/proofs/${ids.testVerified}/status`);
    expect(status.body).toMatchObject({ is_valid: true, is_revoked: false });
  });

  it("gets 404 for A's pending verification, and B's wrong codes do not use up A's attempts", async () => {
    await expectInvisible(bTest, ids.testPending);
    expectError(await bTest.post(`/api/v1/verifications/${ids.testPending}/test-verify`), 404, "not_found");
    const own = await aTest.get(`/api/v1/verifications/${ids.testPending}`);
    expect(own.body).toMatchObject({ status: "pending", attempts: 0 });
  });

  it("gets 404 for A's live verifications", async () => {
    await expectInvisible(bLive, ids.liveVerified);
    await expectInvisible(bLive, ids.livePending);
    const own = await aLive.get(`/api/v1/verifications/${ids.liveVerified}`);
    expect(own.body.status).toBe("verified");
  });

  it("can validate A's proofs: proofs are portable", async () => {
    const byTest = await bTest.post("/api/v1/proofs/validate", { proof_token: testProof });
    expect(byTest.status).toBe(200);
    expect(byTest.body).toMatchObject({
      valid: true,
      verification: { id: ids.testVerified, type: "phone", channel: "telegram", test_mode: true },
    });
    const byLive = await bLive.post("/api/v1/proofs/validate", { proof_token: liveProof });
    expect(byLive.status).toBe(200);
    expect(byLive.body).toMatchObject({
      valid: true,
      verification: { id: ids.liveVerified, type: "wallet", channel: "ethereum", test_mode: false, method: "signature" },
    });
    // but a test proof never passes for a live one, whoever's live key asks
    expect((await bLive.post("/api/v1/proofs/validate", { proof_token: testProof })).body).toMatchObject({
      valid: false,
      reason: "test_proof",
    });
    expect((await aLive.post("/api/v1/proofs/validate", { proof_token: testProof })).body).toMatchObject({
      valid: false,
      reason: "test_proof",
    });
  });
});

describe("the other environment of the same tenant", () => {
  it("A's live key gets 404 for A's test verifications", async () => {
    await expectInvisible(aLive, ids.testVerified);
    await expectInvisible(aLive, ids.testPending);
  });

  it("A's test key gets 404 for A's live verifications, test-verify included", async () => {
    await expectInvisible(aTest, ids.liveVerified);
    await expectInvisible(aTest, ids.livePending);
    expectError(await aTest.post(`/api/v1/verifications/${ids.livePending}/test-verify`), 404, "not_found");
    const own = await aLive.get(`/api/v1/verifications/${ids.livePending}`);
    expect(own.body).toMatchObject({ status: "pending", attempts: 0 });
  });
});

describe("lists", () => {
  const listIds = async (c: ReturnType<typeof api>) => {
    const r = await c.get("/api/v1/verifications?limit=100");
    expect(r.status).toBe(200);
    return {
      ids: r.body.data.map((v: { id: string }) => v.id).sort(),
      total: r.body.pagination.total,
      modes: r.body.data.map((v: { test_mode: boolean }) => v.test_mode),
    };
  };

  it("show each key only its own tenant's rows of its own environment", async () => {
    const at = await listIds(aTest);
    expect(at.ids).toEqual([ids.testVerified, ids.testPending].sort());
    expect(at.total).toBe(2);
    expect(at.modes).toEqual([true, true]);
    const al = await listIds(aLive);
    expect(al.ids).toEqual([ids.liveVerified, ids.livePending].sort());
    expect(al.total).toBe(2);
    expect(al.modes).toEqual([false, false]);
    for (const c of [bTest, bLive]) {
      const b = await listIds(c);
      expect(b.ids).toEqual([]);
      expect(b.total).toBe(0);
    }
  });

  it("filters never widen the scope", async () => {
    const r = await bTest.get("/api/v1/verifications?status=verified&type=phone");
    expect(r.body.data).toEqual([]);
    const l = await aLive.get("/api/v1/verifications?type=phone");
    expect(l.body.data).toEqual([]);
  });
});
