import { describe, expect, it } from "vitest";
import { createLocalJWKSet, jwtVerify, compactVerify } from "jose";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";

const stack = useStack();
const t = useTenant(stack, "Flow");

describe("the whole path: create → test-verify → proof → validate → revoke", () => {
  it("issues a (test) proof that verifies offline against the served test JWKS, and revocation reaches the signed test list", async () => {
    const c = api(stack.url, t.testKey);
    const created = await c.post("/api/v1/verifications", {
      type: "phone",
      channel: "telegram",
      identifier: "+370 691 99199",
      external_user_id: "user-42",
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      type: "phone",
      channel: "telegram",
      status: "pending",
      identifier: "+37069199199",
      test_mode: true,
    });
    expect(created.body.id).toMatch(/^ver_[0-9A-Z]{26}$/);
    expect(created.body.challenge.code).toMatch(/^[A-Z0-9]{6}$/);
    expect(created.body.challenge.deep_link).toBe(`https://t.me/icv_test_bot?start=${created.body.challenge.code}`);

    const read = await c.get(`/api/v1/verifications/${created.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body.challenge.code).toBeUndefined();
    expect(read.body.status).toBe("pending");

    const verified = await c.post(`/api/v1/verifications/${created.body.id}/test-verify`);
    expect(verified.status).toBe(200);
    expect(verified.body).toMatchObject({ id: created.body.id, status: "verified", test_mode: true });
    // the spec's flat fields, and beside them the proof object as GET answers it
    expect(verified.body.proof).toEqual({
      token: verified.body.proof_token,
      expires_at: verified.body.proof_expires_at,
      identifier_salt: verified.body.identifier_salt,
    });
    expect((await c.get(`/api/v1/verifications/${created.body.id}`)).body.proof).toEqual(verified.body.proof);

    // offline: the (test) JWKS alone checks the signature; the raw phone number is nowhere in the token
    const jwks = await api(stack.url).get("/.well-known/jwks-test.json");
    expect(jwks.headers.get("cache-control")).toBe("public, max-age=86400");
    const { payload, protectedHeader } = await jwtVerify(verified.body.proof_token, createLocalJWKSet(jwks.body), {
      algorithms: ["RS256"],
    });
    expect(protectedHeader).toMatchObject({ alg: "RS256", typ: "JWT" });
    expect(jwks.body.keys.map((k: { kid: string }) => k.kid)).toContain(protectedHeader.kid);
    expect(payload).toMatchObject({
      sub: created.body.id,
      jti: created.body.id,
      proof_schema_version: "1.0",
      tenant_id: t.tenantId,
      env: "test",
      type: "phone",
      channel: "telegram",
      external_user_id: "user-42",
      method: "test",
    });
    expect(payload.identifier_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(verified.body.proof_token).not.toContain("37069199199");
    expect(JSON.stringify(payload)).not.toContain("37069199199");

    // online validation, with and without the identifier
    const v1 = await c.post("/api/v1/proofs/validate", { proof_token: verified.body.proof_token, identifier: "+37069199199" });
    expect(v1.body).toMatchObject({ valid: true, verification: { id: created.body.id, type: "phone", channel: "telegram" } });
    const v2 = await c.post("/api/v1/proofs/validate", { proof_token: verified.body.proof_token, identifier: "+37069199190" });
    expect(v2.body).toMatchObject({ valid: false, reason: "identifier_mismatch" });

    // status, revoke (idempotent), status again
    const s1 = await c.get(`/api/v1/proofs/${created.body.id}/status`);
    expect(s1.body).toMatchObject({ proof_id: created.body.id, is_valid: true, is_revoked: false, revoked_at: null, is_expired: false });
    const r1 = await c.post(`/api/v1/proofs/${created.body.id}/revoke`, { reason: "user_request" });
    expect(r1.status).toBe(200);
    expect(r1.body).toMatchObject({ success: true, verification_id: created.body.id, status: "revoked" });
    const r2 = await c.post(`/api/v1/proofs/${created.body.id}/revoke`, { reason: "fraud" });
    expect(r2.body.revoked_at).toBe(r1.body.revoked_at);
    const s2 = await c.get(`/api/v1/proofs/${created.body.id}/status`);
    expect(s2.body).toMatchObject({ is_valid: false, is_revoked: true, revoked_reason: "user_request", revoked_at: r1.body.revoked_at });
    const after = await c.get(`/api/v1/verifications/${created.body.id}`);
    expect(after.body).toMatchObject({ status: "revoked", revoked_at: r1.body.revoked_at, revoked_reason: "user_request" });
    const v3 = await c.post("/api/v1/proofs/validate", { proof_token: verified.body.proof_token });
    expect(v3.body).toMatchObject({ valid: false, reason: "revoked" });

    // the public test revocation list carries it, signed by a test JWKS key, with caching headers
    const list = await api(stack.url).get("/api/v1/proofs/revoked?env=test");
    expect(list.status).toBe(200);
    expect(list.headers.get("cache-control")).toBe("public, max-age=300");
    expect(list.body.revoked).toContainEqual({ proof_id: created.body.id, revoked_at: r1.body.revoked_at, reason: "user_request" });
    const { payload: signed } = await compactVerify(list.body.signature, createLocalJWKSet(jwks.body));
    expect(JSON.parse(new TextDecoder().decode(signed))).toEqual({ revoked: list.body.revoked, generated_at: list.body.generated_at });
    const etag = list.headers.get("etag")!;
    const again = await api(stack.url).get("/api/v1/proofs/revoked?env=test", { "if-none-match": etag });
    expect(again.status).toBe(304);
    const since = await api(stack.url).get(`/api/v1/proofs/revoked?env=test&since=${encodeURIComponent(r1.body.revoked_at)}`);
    expect(since.body.revoked.map((e: { proof_id: string }) => e.proof_id)).not.toContain(created.body.id);
  });
});
