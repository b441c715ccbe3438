import { createHash } from "node:crypto";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { createLocalJWKSet, compactVerify, decodeJwt, decodeProtectedHeader, jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { ManualClock, fromConnectError, newId } from "@icv/platform";
import { startTestProofService, TEST_ISSUER, type TestProofService } from "./support/proof-service.ts";

const T0 = new Date("2026-03-01T12:00:00.000Z");
const clock = new ManualClock(T0);
let svc: TestProofService;

beforeAll(async () => {
  svc = await startTestProofService(clock);
});
afterAll(() => svc?.close());

const scopeA = { tenantId: "ten_A", environment: Environment.TEST };
const scopeALive = { tenantId: "ten_A", environment: Environment.LIVE };
const scopeB = { tenantId: "ten_B", environment: Environment.TEST };
const hash = (s: string) => createHash("sha256").update(s).digest("hex");
const saltedHash = (salt: string, s: string) => createHash("sha256").update(Buffer.from(salt, "hex")).update(s).digest("hex");

const issue = (over: Record<string, unknown> = {}) =>
  svc.client.issueProof({
    scope: scopeA,
    proofId: newId("verification", clock.now().getTime()),
    type: "email",
    channel: "email",
    identifier: "john.doe@example.com",
    verifiedAt: timestampFromDate(clock.now()),
    expiresInSeconds: 3600,
    method: "otp",
    ...over,
  });

/** The spec error code a call fails with (fails the test when the call succeeds). */
async function errorCode(p: Promise<unknown>): Promise<string> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e, "expected the call to fail").toBeInstanceOf(ConnectError);
  return fromConnectError(e).code;
}

describe("IssueProof", () => {
  it("signs the DECISIONS.md claims exactly, with {alg: RS256, typ: JWT, kid}", async () => {
    const proofId = newId("verification", clock.now().getTime());
    const verifiedAt = new Date(T0.getTime() - 5_000);
    const r = await issue({
      proofId,
      verifiedAt: timestampFromDate(verifiedAt),
      expiresInSeconds: 600,
      externalUserId: "user-42",
      type: "phone",
      channel: "telegram",
      identifier: "+37069199199",
    });
    const iat = Math.floor(clock.now().getTime() / 1000);
    expect(decodeProtectedHeader(r.token)).toEqual({ alg: "RS256", typ: "JWT", kid: r.kid });
    const claims = decodeJwt(r.token) as { status: { status_list: { idx: number; uri: string } } };
    expect(claims).toEqual({
      iss: TEST_ISSUER,
      sub: proofId,
      jti: proofId,
      iat,
      exp: iat + 600,
      proof_schema_version: "1.0",
      tenant_id: "ten_A",
      env: "test",
      type: "phone",
      channel: "telegram",
      identifier_hash: saltedHash(r.identifierSalt, "+37069199199"),
      verified_at: verifiedAt.toISOString(),
      external_user_id: "user-42",
      user_id: "user-42",
      method: "otp",
      status: { status_list: { idx: expect.any(Number), uri: expect.stringMatching(/^http:\/\/localhost:\d+\/api\/v1\/proofs\/status-lists\/test-0$/) } },
    });
    expect(claims.status.status_list.idx).toBeGreaterThanOrEqual(0);
    expect(claims.status.status_list.idx).toBeLessThan(100_000);
    expect(timestampDate(r.expiresAt!).getTime()).toBe((iat + 600) * 1000);
    expect(r.token).not.toContain("37069199199");
    // the salt is returned beside the token, 16 random bytes, never inside it
    expect(r.identifierSalt).toMatch(/^[0-9a-f]{32}$/);
    expect(r.token).not.toContain(r.identifierSalt);
    expect(r.sdJwtVc).toBeUndefined();
  });

  it("salts every proof's identifier_hash anew: the same identifier never hashes the same twice, and never to its plain SHA-256", async () => {
    const [a, b] = [await issue(), await issue()];
    const [ha, hb] = [decodeJwt(a.token).identifier_hash, decodeJwt(b.token).identifier_hash];
    expect(a.identifierSalt).not.toBe(b.identifierSalt);
    expect(ha).not.toBe(hb);
    expect([ha, hb]).not.toContain(hash("john.doe@example.com"));
    expect(ha).toBe(saltedHash(a.identifierSalt, "john.doe@example.com"));
  });

  it("leaves external_user_id out when not set, says env live for a live scope, and defaults the lifetime to 30 days", async () => {
    const r = await issue({ scope: scopeALive, expiresInSeconds: 0 });
    const claims = decodeJwt(r.token);
    expect("external_user_id" in claims).toBe(false);
    expect(claims.env).toBe("live");
    expect(claims.exp! - claims.iat!).toBe(2_592_000);
  });

  it("is idempotent by proof_id: the same token again, even when asked with other fields", async () => {
    const proofId = newId("verification", clock.now().getTime());
    const first = await issue({ proofId });
    clock.advance(2_000);
    const again = await issue({ proofId });
    const changed = await issue({ proofId, type: "phone", channel: "sms", expiresInSeconds: 60 });
    expect(again).toEqual(first);
    expect(changed.token).toBe(first.token);
    expect(timestampDate(changed.expiresAt!)).toEqual(timestampDate(first.expiresAt!));
  });

  it("issues one proof when the same proof_id is asked for several times at once", async () => {
    const proofId = newId("verification", clock.now().getTime());
    const all = await Promise.all(Array.from({ length: 5 }, () => issue({ proofId })));
    expect(new Set(all.map((r) => r.token)).size).toBe(1);
    expect(await svc.client.validateProof({ proofToken: all[0].token, scope: scopeA })).toMatchObject({ valid: true, proofId });
  });

  it("refuses a proof_id another tenant already used", async () => {
    const proofId = newId("verification", clock.now().getTime());
    await issue({ proofId });
    expect(await errorCode(issue({ proofId, scope: scopeB }))).toBe("invalid_state");
  });

  it.each([
    ["a missing proof_id", { proofId: "" }],
    ["a missing type", { type: "" }],
    ["a missing channel", { channel: "" }],
    ["no identifier", { identifier: "" }],
    ["a holder_key with a private member", { holderKey: { kty: "OKP", crv: "Ed25519", x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", d: "x" } }],
    ["a holder_key of a type not allowed", { holderKey: { kty: "oct", k: "c2VjcmV0" } }],
    ["a lifetime under 60 s", { expiresInSeconds: 59 }],
    ["a lifetime over a year", { expiresInSeconds: 31_536_001 }],
    ["no method (every proof says how control was shown)", { method: "" }],
    ["a method outside the list", { method: "challenge" }],
    ["a subject_hash that is not hex SHA-256", { method: "oauth", subjectHash: "github:583231" }],
  ])("answers validation_error for %s", async (_what, over) => {
    expect(await errorCode(issue(over))).toBe("validation_error");
  });

  it("carries subject_hash (an OAuth sign-in's account) as a claim, and only when given", async () => {
    const subject = hash("github:583231");
    const oauth = await issue({
      type: "social",
      channel: "github",
      identifier: "octocat",
      method: "oauth",
      subjectHash: subject,
    });
    expect(decodeJwt(oauth.token)).toMatchObject({ method: "oauth", subject_hash: subject });
    expect(decodeJwt((await issue()).token)).not.toHaveProperty("subject_hash");
  });
});

describe("tenant scope", () => {
  it("refuses tenant-owned calls without a scope, or with an unspecified environment, as unauthorized", async () => {
    const { token } = await issue();
    const proofId = decodeJwt(token).sub!;
    const noScope = [
      issue({ scope: undefined }),
      svc.client.getProofStatus({ proofId }),
      svc.client.revokeProof({ proofId, reason: "fraud" }),
      issue({ scope: { tenantId: "ten_A", environment: Environment.UNSPECIFIED } }),
      svc.client.getProofStatus({ scope: { tenantId: "", environment: Environment.TEST }, proofId }),
    ];
    for (const call of noScope) {
      const e = await call.then(
        () => undefined,
        (err: unknown) => err as ConnectError,
      );
      expect(e?.code).toBe(Code.Unauthenticated);
      expect(fromConnectError(e).code).toBe("unauthorized");
    }
    // and nothing was revoked
    expect((await svc.client.getProofStatus({ scope: scopeA, proofId })).status?.isRevoked).toBe(false);
  });
});

describe("GetProofStatus", () => {
  it("answers the owner's proof and not_found to any other tenant or environment", async () => {
    const { token, expiresAt } = await issue();
    const proofId = decodeJwt(token).sub!;
    const s = await svc.client.getProofStatus({ scope: scopeA, proofId });
    expect(s.status).toMatchObject({ proofId, status: "active", isValid: true, isRevoked: false, isExpired: false });
    expect(timestampDate(s.status!.expiresAt!)).toEqual(timestampDate(expiresAt!));
    expect(await errorCode(svc.client.getProofStatus({ scope: scopeB, proofId }))).toBe("not_found");
    expect(await errorCode(svc.client.getProofStatus({ scope: scopeALive, proofId }))).toBe("not_found");
    expect(await errorCode(svc.client.getProofStatus({ scope: scopeA, proofId: "ver_nope" }))).toBe("not_found");
  });
});

describe("RevokeProof", () => {
  it("revokes once: a second revoke answers the original revoked_at and reason", async () => {
    const { token } = await issue();
    const proofId = decodeJwt(token).sub!;
    const first = await svc.client.revokeProof({ scope: scopeA, proofId, reason: "fraud" });
    expect(first).toMatchObject({ proofId, reason: "fraud" });
    expect(timestampDate(first.revokedAt!)).toEqual(clock.now());
    clock.advance(60_000);
    const again = await svc.client.revokeProof({ scope: scopeA, proofId, reason: "other" });
    expect(again.reason).toBe("fraud");
    expect(timestampDate(again.revokedAt!)).toEqual(timestampDate(first.revokedAt!));

    const s = await svc.client.getProofStatus({ scope: scopeA, proofId });
    expect(s.status).toMatchObject({ status: "revoked", isValid: false, isRevoked: true, revokedReason: "fraud" });
    expect(await svc.client.validateProof({ proofToken: token, scope: scopeA })).toMatchObject({ valid: false, reason: "revoked" });
  });

  it("answers validation_error for a reason outside the list, and not_found for another tenant's proof (which stays valid)", async () => {
    const { token } = await issue();
    const proofId = decodeJwt(token).sub!;
    expect(await errorCode(svc.client.revokeProof({ scope: scopeA, proofId, reason: "because" }))).toBe("validation_error");
    expect(await errorCode(svc.client.revokeProof({ scope: scopeB, proofId, reason: "fraud" }))).toBe("not_found");
    expect(await errorCode(svc.client.revokeProof({ scope: scopeA, proofId: "ver_nope", reason: "fraud" }))).toBe("not_found");
    expect(await svc.client.validateProof({ proofToken: token, scope: scopeA })).toMatchObject({ valid: true, proofId });
  });
});

describe("ValidateProof", () => {
  it("is open to any tenant holding the token and answers the proof's facts, with its method", async () => {
    const { token, expiresAt } = await issue({ type: "phone", channel: "sms", identifier: "+15555550100" });
    const v = await svc.client.validateProof({ proofToken: token, scope: scopeA });
    expect(v).toMatchObject({
      valid: true,
      proofId: decodeJwt(token).sub,
      type: "phone",
      channel: "sms",
      identifierHash: saltedHash(v.identifierSalt, "+15555550100"),
      method: "otp",
      testMode: true,
    });
    expect(await svc.client.validateProof({ proofToken: token, scope: scopeB })).toMatchObject({ valid: true, testMode: true });
    expect(timestampDate(v.expiresAt!)).toEqual(timestampDate(expiresAt!));
  });

  it("answers reasons, not errors, for a bad token", async () => {
    expect(await svc.client.validateProof({ proofToken: "garbage", scope: scopeA })).toMatchObject({ valid: false, reason: "malformed" });
    const [h, p, s] = (await issue()).token.split(".");
    const payload = JSON.parse(Buffer.from(p, "base64url").toString());
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...payload, tenant_id: "ten_B" })).toString("base64url")}.${s}`;
    expect(await svc.client.validateProof({ proofToken: forged, scope: scopeA })).toMatchObject({
      valid: false,
      reason: "invalid_signature",
    });
  });
});

describe("GetRevocationList", () => {
  it("(test list) is signed with a key of the test GetJwks and its payload is exactly {revoked, generated_at}", async () => {
    const { token } = await issue();
    const proofId = decodeJwt(token).sub!;
    await svc.client.revokeProof({ scope: scopeA, proofId, reason: "key_compromise" });
    const list = await svc.client.getRevocationList({ environment: Environment.TEST });
    expect(list.revoked.map((r) => r.proofId)).toContain(proofId);

    const { keys } = await svc.client.getJwks({ environment: Environment.TEST });
    const jwks = createLocalJWKSet({ keys: keys.map((k) => ({ kty: k.kty, n: k.n, e: k.e, alg: k.alg, use: k.use, kid: k.kid })) });
    const { payload, protectedHeader } = await compactVerify(list.signature, jwks);
    expect(protectedHeader.alg).toBe("RS256");
    expect(keys.map((k) => k.kid)).toContain(protectedHeader.kid);
    const doc = JSON.parse(new TextDecoder().decode(payload));
    expect(doc).toEqual({
      revoked: list.revoked.map((r) => ({ proof_id: r.proofId, revoked_at: timestampDate(r.revokedAt!).toISOString(), reason: r.reason })),
      generated_at: timestampDate(list.generatedAt!).toISOString(),
    });
    expect(doc.revoked.find((r: { proof_id: string }) => r.proof_id === proofId)).toEqual({
      proof_id: proofId,
      revoked_at: clock.now().toISOString(),
      reason: "key_compromise",
    });
  });

  it("with since, lists only what was revoked after it", async () => {
    const before = await issue();
    await svc.client.revokeProof({ scope: scopeA, proofId: decodeJwt(before.token).sub!, reason: "other" });
    const cut = clock.now();
    clock.advance(1_000);
    const after = await issue();
    await svc.client.revokeProof({ scope: scopeA, proofId: decodeJwt(after.token).sub!, reason: "other" });
    const list = await svc.client.getRevocationList({ since: timestampFromDate(cut), environment: Environment.TEST });
    expect(list.revoked.map((r) => r.proofId)).toEqual([decodeJwt(after.token).sub]);
  });
});

describe("GetRevocationList and expiry", () => {
  it("leaves out a revoked proof once it has expired (it fails offline checks on its own)", async () => {
    const { token } = await issue({ expiresInSeconds: 60 });
    const proofId = decodeJwt(token).sub!;
    await svc.client.revokeProof({ scope: scopeA, proofId, reason: "other" });
    expect((await svc.client.getRevocationList({ environment: Environment.TEST })).revoked.map((r) => r.proofId)).toContain(proofId);
    clock.advance(61_000);
    // a new revocation empties the list cache
    await svc.client.revokeProof({ scope: scopeA, proofId: decodeJwt((await issue()).token).sub!, reason: "other" });
    expect((await svc.client.getRevocationList({ environment: Environment.TEST })).revoked.map((r) => r.proofId)).not.toContain(proofId);
  });
});

describe("RotateSigningKey (own service: the JWKS depends on every proof's expiry)", () => {
  const rclock = new ManualClock(T0);
  let rot: TestProofService;
  beforeAll(async () => {
    rot = await startTestProofService(rclock);
  });
  afterAll(() => rot?.close());

  it("keeps the old key in the JWKS while a proof it signed is unexpired and for a day after rotation, then drops it", async () => {
    const old = await rot.client.issueProof({
      scope: scopeA,
      proofId: newId("verification"),
      type: "email",
      channel: "email",
      identifier: "a@example.com",
      expiresInSeconds: 120,
      method: "test",
    });
    const liveKids = (await rot.client.getJwks({ environment: Environment.LIVE })).keys.map((k) => k.kid);
    const kidsBefore = (await rot.client.getJwks({ environment: Environment.TEST })).keys.map((k) => k.kid);
    expect(kidsBefore).toEqual([old.kid]);

    const r = await rot.client.rotateSigningKey({ environment: Environment.TEST });
    expect(r.retiredKid).toBe(old.kid);
    expect(r.kid).not.toBe(old.kid);
    expect(r.environment).toBe(Environment.TEST);
    // the live set is another set: untouched by a test rotation
    expect((await rot.client.getJwks({ environment: Environment.LIVE })).keys.map((k) => k.kid)).toEqual(liveKids);

    const fresh = await rot.client.issueProof({
      scope: scopeA,
      proofId: newId("verification"),
      type: "email",
      channel: "email",
      identifier: "b@example.com",
      expiresInSeconds: 3600,
      method: "test",
    });
    expect(fresh.kid).toBe(r.kid);
    expect(decodeProtectedHeader(fresh.token).kid).toBe(r.kid);

    const jwks = await rot.client.getJwks({ environment: Environment.TEST });
    expect(jwks.keys.map((k) => k.kid).sort()).toEqual([old.kid, r.kid].sort());
    // both proofs verify offline against the published set
    const set = createLocalJWKSet({ keys: jwks.keys.map((k) => ({ kty: k.kty, n: k.n, e: k.e, alg: k.alg, kid: k.kid })) });
    const at = { issuer: TEST_ISSUER, currentDate: rclock.now(), algorithms: ["RS256"] };
    await expect(jwtVerify(old.token, set, at)).resolves.toBeDefined();
    await expect(jwtVerify(fresh.token, set, at)).resolves.toBeDefined();
    expect(await rot.client.validateProof({ proofToken: old.token, scope: scopeA })).toMatchObject({ valid: true });

    // past the old proof's expiry the retired key stays a day (cached JWKS and revocation lists)…
    rclock.advance(121_000);
    expect((await rot.client.getJwks({ environment: Environment.TEST })).keys.map((k) => k.kid).sort()).toEqual([old.kid, r.kid].sort());
    // …then only the new key is published
    rclock.advance(24 * 3600_000);
    expect((await rot.client.getJwks({ environment: Environment.TEST })).keys.map((k) => k.kid)).toEqual([r.kid]);
    expect(await rot.client.validateProof({ proofToken: old.token, scope: scopeA })).toMatchObject({ valid: false, reason: "expired" });
  });
});

const jwkSet = (keys: { kty: string; n: string; e: string; alg: string; kid: string }[]) =>
  createLocalJWKSet({ keys: keys.map((k) => ({ kty: k.kty, n: k.n, e: k.e, alg: k.alg, kid: k.kid })) });

describe("test and live key sets (test proofs never pass for live ones)", () => {
  it("signs test proofs with a key of the test set only and live proofs with a key of the live set only", async () => {
    const test = await issue({ method: "test" });
    const live = await issue({ scope: scopeALive, method: "otp" });
    const liveKeys = (await svc.client.getJwks({ environment: Environment.LIVE })).keys;
    const testKeys = (await svc.client.getJwks({ environment: Environment.TEST })).keys;
    const liveKids = liveKeys.map((k) => k.kid);
    const testKids = testKeys.map((k) => k.kid);
    expect(liveKids.filter((k) => testKids.includes(k))).toEqual([]);
    expect(testKids).toContain(test.kid);
    expect(liveKids).not.toContain(test.kid);
    expect(liveKids).toContain(live.kid);
    // unspecified is the live set (the old default of GetJwks)
    expect((await svc.client.getJwks({})).keys.map((k) => k.kid)).toEqual(liveKids);

    // offline: the test proof fails against the live set and passes against the test set
    const at = { issuer: TEST_ISSUER, currentDate: clock.now(), algorithms: ["RS256"] };
    await expect(jwtVerify(test.token, jwkSet(liveKeys), at)).rejects.toThrow();
    await expect(jwtVerify(test.token, jwkSet(testKeys), at)).resolves.toBeDefined();
    await expect(jwtVerify(live.token, jwkSet(liveKeys), at)).resolves.toBeDefined();
    await expect(jwtVerify(live.token, jwkSet(testKeys), at)).rejects.toThrow();
  });

  it("answers test_proof for a test proof validated for a live caller, valid with test_mode for a test caller; a live proof is valid for both", async () => {
    const test = await issue({ method: "test" });
    const live = await issue({ scope: scopeALive, method: "signature" });
    expect(await svc.client.validateProof({ proofToken: test.token, scope: scopeALive })).toMatchObject({
      valid: false,
      reason: "test_proof",
    });
    expect(await svc.client.validateProof({ proofToken: test.token, scope: { tenantId: "ten_B", environment: Environment.LIVE } })).toMatchObject({
      valid: false,
      reason: "test_proof",
    });
    expect(await svc.client.validateProof({ proofToken: test.token, scope: scopeA })).toMatchObject({
      valid: true,
      testMode: true,
      method: "test",
    });
    expect(await svc.client.validateProof({ proofToken: live.token, scope: scopeALive })).toMatchObject({
      valid: true,
      testMode: false,
      method: "signature",
    });
    expect(await svc.client.validateProof({ proofToken: live.token, scope: scopeB })).toMatchObject({ valid: true, testMode: false });
    // validation needs the caller's scope (its environment decides)
    expect(await errorCode(svc.client.validateProof({ proofToken: live.token }))).toBe("unauthorized");
  });

  it("keeps one revocation list per environment, each signed by a key of its own set", async () => {
    const test = await issue();
    const live = await issue({ scope: scopeALive });
    await svc.client.revokeProof({ scope: scopeA, proofId: decodeJwt(test.token).sub!, reason: "fraud" });
    await svc.client.revokeProof({ scope: scopeALive, proofId: decodeJwt(live.token).sub!, reason: "fraud" });
    const liveList = await svc.client.getRevocationList({ environment: Environment.LIVE });
    const testList = await svc.client.getRevocationList({ environment: Environment.TEST });
    expect(liveList.revoked.map((r) => r.proofId)).toContain(decodeJwt(live.token).sub);
    expect(liveList.revoked.map((r) => r.proofId)).not.toContain(decodeJwt(test.token).sub);
    expect(testList.revoked.map((r) => r.proofId)).toContain(decodeJwt(test.token).sub);
    expect(testList.revoked.map((r) => r.proofId)).not.toContain(decodeJwt(live.token).sub);
    const liveKeys = jwkSet((await svc.client.getJwks({ environment: Environment.LIVE })).keys);
    const testKeys = jwkSet((await svc.client.getJwks({ environment: Environment.TEST })).keys);
    await expect(compactVerify(liveList.signature, liveKeys)).resolves.toBeDefined();
    await expect(compactVerify(liveList.signature, testKeys)).rejects.toThrow();
    await expect(compactVerify(testList.signature, testKeys)).resolves.toBeDefined();
    await expect(compactVerify(testList.signature, liveKeys)).rejects.toThrow();
  });
});
