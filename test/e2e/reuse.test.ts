// Smart reuse through the public API: an end user's existing proof (same tenant, environment,
// external_user_id, type and identifier) completes a request's asset with a new proof that says
// method reused_proof; and every refusal (no proof, too old, already verified, expired request,
// revoked or expired source, wrong token, another tenant's proofs).
import { decodeJwt } from "jose";
import { describe, expect, it } from "vitest";
import { ManualClock } from "@icv/platform";
import { expectError } from "../support/expect-error.ts";
import { api } from "../support/stack.ts";
import { useStack } from "../support/use-stack.ts";

const clock = new ManualClock(Date.now());
const stack = useStack({ SWEEP_INTERVAL_MS: "100", PUBLIC_BASE_URL: "https://verify.example.test" }, clock);

type Client = ReturnType<typeof api>;

async function tenant(): Promise<Client> {
  const r = await stack.admin.createTenant({ name: "Reuse" }, { headers: stack.adminHeaders });
  return api(stack.url, r.testKey);
}

let n = 0;
const email = () => `reuse${n++}@example.com`;
const user = () => `user-${n++}`;

/** A verified email verification of `externalUserId` (test-verify), answered as the API shows it. */
async function verifiedEmail(c: Client, identifier: string, externalUserId: string, extra: Record<string, unknown> = {}) {
  const v = await c.post("/api/v1/verifications", {
    type: "email",
    channel: "email",
    identifier,
    external_user_id: externalUserId,
    ...extra,
  });
  expect(v.status, v.text).toBe(201);
  const done = await c.post(`/api/v1/verifications/${v.body.id}/test-verify`);
  expect(done.status, done.text).toBe(200);
  const got = await c.get(`/api/v1/verifications/${v.body.id}`);
  expect(got.body.status).toBe("verified");
  return got.body;
}

/** Creates a request; answers its id and the token of its verification_url. */
async function request(c: Client, body: Record<string, unknown>) {
  const r = await c.post("/api/v1/verification-requests", body);
  expect(r.status, r.text).toBe(201);
  const token = new URL(r.body.verification_url).hash.slice(1);
  return { id: r.body.id as string, token, body: r.body };
}

/** The hosted page's client: no API key, the request token in X-Request-Token. */
const page = () => api(stack.url);
const proofs = (id: string, token?: string) => page().get(`/api/v1/verify/request/${id}/proofs`, token === undefined ? {} : { "x-request-token": token });
const autoVerify = (id: string, idx: number, token: string, body?: Record<string, unknown>) =>
  page().post(`/api/v1/verify/request/${id}/assets/${idx}/auto-verify`, body, { "x-request-token": token });

describe("smart reuse", () => {
  it("offers the user's existing proof and completes the asset with a new proof whose JWT says method reused_proof", async () => {
    const c = await tenant();
    const x = user();
    const addr = email();
    const source = await verifiedEmail(c, addr, x);
    const rq = await request(c, { assets: [{ type: "email", identifier: addr, channel: "email" }], external_user_id: x });

    const list = await proofs(rq.id, rq.token);
    expect(list.status, list.text).toBe(200);
    expect(list.body).toEqual({
      request_id: rq.id,
      proofs: [
        {
          asset_index: 0,
          verification_id: source.id,
          type: "email",
          channel: "email",
          identifier: expect.not.stringContaining(addr.split("@")[0]),
          verified_at: source.verified_at,
          proof_expires_at: source.proof.expires_at,
        },
      ],
    });
    expect(list.body.proofs[0].identifier).toMatch(/\*/);

    const done = await autoVerify(rq.id, 0, rq.token);
    expect(done.status, done.text).toBe(200);
    expect(done.body).toMatchObject({
      success: true,
      request_id: rq.id,
      request_status: "completed",
      asset: { index: 0, status: "verified" },
      verification: { method: "reused_proof", reused_from: source.id, type: "email", channel: "email" },
    });
    const newId = done.body.verification.id;
    expect(newId).not.toBe(source.id);

    // the tenant sees the new verification, its proof is a new, valid JWT with method reused_proof
    const v = await c.get(`/api/v1/verifications/${newId}`);
    expect(v.body).toMatchObject({ id: newId, status: "verified", method: "reused_proof", reused_from: source.id, external_user_id: x });
    expect(v.body.proof.token).not.toBe(source.proof.token);
    const claims = decodeJwt(v.body.proof.token);
    expect(claims).toMatchObject({ sub: newId, method: "reused_proof", type: "email", external_user_id: x });
    expect(decodeJwt(source.proof.token).method).toBe("test"); // the source proof says how it was made (test-verify)
    const valid = await c.post("/api/v1/proofs/validate", { proof_token: v.body.proof.token, identifier: addr });
    expect(valid.body).toMatchObject({ valid: true, verification: { id: newId, method: "reused_proof" } });
    // the source verification is untouched
    expect((await c.get(`/api/v1/verifications/${source.id}`)).body).toMatchObject({ status: "verified", method: "test" });

    const r = await c.get(`/api/v1/verification-requests/${rq.id}`);
    expect(r.body).toMatchObject({ status: "completed", assets: [{ index: 0, status: "verified", verification_id: newId }] });
  });

  it("an asset left open takes any identifier of the type (masked), and the chosen verification_id", async () => {
    const c = await tenant();
    const x = user();
    const older = await verifiedEmail(c, email(), x);
    const newer = await verifiedEmail(c, email(), x);
    const rq = await request(c, {
      assets: [{ type: "email" }, { type: "phone", identifier: "+37069200001", channel: "telegram", required: false }],
      external_user_id: x,
    });
    const list = await proofs(rq.id, rq.token);
    expect(list.body.proofs.map((p: any) => [p.asset_index, p.verification_id])).toEqual([
      [0, newer.id],
      [0, older.id],
    ]);
    expect(list.body.proofs.every((p: any) => p.identifier.includes("*"))).toBe(true);

    expectError(await autoVerify(rq.id, 0, rq.token, { verification_id: "ver_unknown" }), 404, "no_existing_proof");
    const done = await autoVerify(rq.id, 0, rq.token, { verification_id: older.id });
    expect(done.status, done.text).toBe(200);
    expect(done.body.verification.reused_from).toBe(older.id);
    const r = await c.get(`/api/v1/verification-requests/${rq.id}`);
    // the asset records the identifier it was completed with; the optional phone asset stays open
    expect(r.body).toMatchObject({
      status: "completed",
      assets: [
        { index: 0, status: "verified", identifier: older.identifier, channel: "email" },
        { index: 1, status: "in_progress" },
      ],
    });
    // nothing more to offer for the verified asset, and it cannot be completed twice
    expect((await proofs(rq.id, rq.token)).body.proofs).toEqual([]);
  });

  it("already_verified: an asset completed once is refused", async () => {
    const c = await tenant();
    const x = user();
    const addr = email();
    await verifiedEmail(c, addr, x);
    const rq = await request(c, {
      assets: [
        { type: "email", identifier: addr, channel: "email" },
        { type: "email", identifier: email(), channel: "email" },
      ],
      external_user_id: x,
    });
    expect((await autoVerify(rq.id, 0, rq.token)).status).toBe(200);
    expectError(await autoVerify(rq.id, 0, rq.token), 409, "already_verified");
    // the request is partial (one of two required assets), the second asset has nothing to reuse
    expect((await c.get(`/api/v1/verification-requests/${rq.id}`)).body.status).toBe("partial");
    expectError(await autoVerify(rq.id, 1, rq.token), 404, "no_existing_proof");
    expectError(await autoVerify(rq.id, 7, rq.token), 404, "not_found");
  });

  it("no_existing_proof: a request without external_user_id, or a user without a matching proof", async () => {
    const c = await tenant();
    const x = user();
    const addr = email();
    await verifiedEmail(c, addr, x);
    const anonymous = await request(c, { assets: [{ type: "email", identifier: addr, channel: "email" }] });
    expect((await proofs(anonymous.id, anonymous.token)).body.proofs).toEqual([]);
    expectError(await autoVerify(anonymous.id, 0, anonymous.token), 404, "no_existing_proof");

    const otherUser = await request(c, { assets: [{ type: "email", identifier: addr, channel: "email" }], external_user_id: user() });
    expectError(await autoVerify(otherUser.id, 0, otherUser.token), 404, "no_existing_proof");
    const otherAddress = await request(c, { assets: [{ type: "email", identifier: email(), channel: "email" }], external_user_id: x });
    expect((await proofs(otherAddress.id, otherAddress.token)).body.proofs).toEqual([]);
    expectError(await autoVerify(otherAddress.id, 0, otherAddress.token), 404, "no_existing_proof");
    const otherType = await request(c, { assets: [{ type: "phone" }], external_user_id: x });
    expectError(await autoVerify(otherType.id, 0, otherType.token), 404, "no_existing_proof");
  });

  it("a revoked proof, an expired proof and a pending verification are never offered", async () => {
    const c = await tenant();
    const x = user();
    const revoked = await verifiedEmail(c, email(), x);
    expect((await c.post(`/api/v1/proofs/${revoked.id}/revoke`, { reason: "user_request" })).status).toBe(200);
    const shortLived = await verifiedEmail(c, email(), x, { proof_expires_in: 120 });
    const pending = await c.post("/api/v1/verifications", { type: "email", channel: "email", identifier: email(), external_user_id: x });
    const rq = await request(c, { assets: [{ type: "email" }], external_user_id: x });
    expect((await proofs(rq.id, rq.token)).body.proofs.map((p: any) => p.verification_id)).toEqual([shortLived.id]);
    expectError(await autoVerify(rq.id, 0, rq.token, { verification_id: revoked.id }), 404, "no_existing_proof");
    expectError(await autoVerify(rq.id, 0, rq.token, { verification_id: pending.body.id }), 404, "no_existing_proof");

    clock.advance(121_000); // the short-lived proof has expired
    expect((await proofs(rq.id, rq.token)).body.proofs).toEqual([]);
    expectError(await autoVerify(rq.id, 0, rq.token), 404, "no_existing_proof");
  });

  it("proof_too_old: max_proof_age bounds how long before the request the proof was verified", async () => {
    const c = await tenant();
    const x = user();
    const addr = email();
    const source = await verifiedEmail(c, addr, x);
    clock.advance(2 * 3600_000);
    const strict = await request(c, {
      assets: [{ type: "email", identifier: addr, channel: "email" }],
      external_user_id: x,
      max_proof_age: 3600,
    });
    expect(strict.body.max_proof_age).toBe(3600);
    expect((await proofs(strict.id, strict.token)).body.proofs).toEqual([]);
    expectError(await autoVerify(strict.id, 0, strict.token), 422, "proof_too_old");
    expectError(await autoVerify(strict.id, 0, strict.token, { verification_id: source.id }), 422, "proof_too_old");

    const lenient = await request(c, {
      assets: [{ type: "email", identifier: addr, channel: "email" }],
      external_user_id: x,
      max_proof_age: 3 * 3600,
    });
    expect((await proofs(lenient.id, lenient.token)).body.proofs.map((p: any) => p.verification_id)).toEqual([source.id]);
    expect((await autoVerify(lenient.id, 0, lenient.token)).status).toBe(200);

    for (const bad of [0, 59, 31_536_001, 1.5, "3600"]) {
      expectError(await c.post("/api/v1/verification-requests", { assets: [{ type: "email" }], max_proof_age: bad }), 400, "validation_error");
    }
  });

  it("a reused proof is not offered again (the age of the original proof cannot be refreshed)", async () => {
    const c = await tenant();
    const x = user();
    const addr = email();
    await verifiedEmail(c, addr, x);
    const first = await request(c, { assets: [{ type: "email", identifier: addr, channel: "email" }], external_user_id: x });
    const reused = await autoVerify(first.id, 0, first.token);
    const second = await request(c, { assets: [{ type: "email", identifier: addr, channel: "email" }], external_user_id: x });
    const offered = (await proofs(second.id, second.token)).body.proofs.map((p: any) => p.verification_id);
    expect(offered).toEqual([reused.body.verification.reused_from]);
  });

  it("request_expired for an expired request; invalid_state for a cancelled one", async () => {
    const c = await tenant();
    const x = user();
    const addr = email();
    await verifiedEmail(c, addr, x, { proof_expires_in: 86_400 });
    const rq = await request(c, { assets: [{ type: "email", identifier: addr, channel: "email" }], external_user_id: x, expires_in: 60 });
    clock.advance(61_000);
    expectError(await proofs(rq.id, rq.token), 410, "request_expired");
    expectError(await autoVerify(rq.id, 0, rq.token), 410, "request_expired");

    const cancelled = await request(c, { assets: [{ type: "email", identifier: addr, channel: "email" }], external_user_id: x });
    expect((await c.del(`/api/v1/verification-requests/${cancelled.id}`)).status).toBe(200);
    expect((await proofs(cancelled.id, cancelled.token)).body.proofs).toEqual([]);
    expectError(await autoVerify(cancelled.id, 0, cancelled.token), 409, "invalid_state");
  });

  it("a wrong token, another request's token or no token answers 404; another tenant's proofs are never offered", async () => {
    const a = await tenant();
    const b = await tenant();
    const x = user();
    const addr = email();
    await verifiedEmail(b, addr, x); // tenant B knows this user and address
    const rq = await request(a, { assets: [{ type: "email", identifier: addr, channel: "email" }], external_user_id: x });
    const other = await request(a, { assets: [{ type: "email" }] });
    const inB = await request(b, { assets: [{ type: "email", identifier: addr, channel: "email" }], external_user_id: x });

    for (const token of [other.token, inB.token, "garbage", `${rq.token.split(".")[0]}.${"A".repeat(43)}`]) {
      expectError(await proofs(rq.id, token), 404, "not_found");
      expectError(await autoVerify(rq.id, 0, token), 404, "not_found");
    }
    expectError(await proofs(rq.id), 404, "not_found");
    expectError(await proofs("vreq_01KGQ3Z3Y8R5F6G7H8J9K0M1N2", rq.token), 404, "not_found");
    expectError(await proofs("vreq_unknown", rq.token), 400, "validation_error"); // not an id: refused before any lookup
    // tenant A's request sees nothing of tenant B
    expect((await proofs(rq.id, rq.token)).body.proofs).toEqual([]);
    expectError(await autoVerify(rq.id, 0, rq.token), 404, "no_existing_proof");
    // and B's own request does (the same user in B's scope)
    expect((await proofs(inB.id, inB.token)).body.proofs).toHaveLength(1);
  });
});
