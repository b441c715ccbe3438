// SD-JWT VC (issue 26): issued beside the JWT with the OWF library, verified by the OWF verifier
// against our key set and live status list, presented with and without the identifier and with
// a key binding; every refusal of validate for presentations (holder_binding_required,
// holder_binding_invalid, a replay, malformed input).
import { createHash, generateKeyPairSync } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { ProofFormat } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import { ManualClock, newId } from "@icv/platform";
import { holder, jwtParts, owfVerifier, presentWith } from "../../../test/support/sd-jwt.ts";
import { startTestProofService, TEST_ISSUER, type TestProofService } from "./support/proof-service.ts";

const clock = new ManualClock(new Date(Math.floor(Date.now() / 1000) * 1000));
let svc: TestProofService;
beforeAll(async () => {
  svc = await startTestProofService(clock);
});
afterAll(() => svc?.close());

const test = { tenantId: "ten_A", environment: Environment.TEST };
const live = { tenantId: "ten_A", environment: Environment.LIVE };
const PHONE = "+37069199199";
const alice = holder();
const now = () => Math.floor(clock.now().getTime() / 1000);

const issue = (over: Record<string, unknown> = {}) =>
  svc.client.issueProof({
    scope: test,
    proofId: newId("verification", clock.now().getTime()),
    type: "phone",
    channel: "whatsapp",
    identifier: PHONE,
    externalUserId: "user-7",
    expiresInSeconds: 3600,
    method: "reverse_otp",
    format: ProofFormat.SD_JWT_VC,
    holderKey: alice.publicJwk,
    ...over,
  });

const verifierOf = (env: Environment) =>
  owfVerifier(
    async () => (await svc.client.getJwks({ environment: env })).keys,
    async (uri) => (await svc.client.getStatusList({ listId: uri.split("/").pop()! })).jwt,
  );

const validate = (proofToken: string, over: Record<string, unknown> = {}) => svc.client.validateProof({ proofToken, scope: test, ...over });

describe("the SD-JWT VC", () => {
  it("is issued beside the JWT as DECISIONS.md says, and the OWF verifier accepts it against jwks-test and the live status list", async () => {
    const r = await issue();
    const [issuerJwt, ...rest] = r.sdJwtVc!.split("~");
    expect(rest.at(-1)).toBe(""); // no key-binding JWT: the holder adds one
    const { header, payload } = jwtParts(issuerJwt);
    expect(header).toEqual({ typ: "dc+sd-jwt", alg: "RS256", kid: r.kid });
    expect(payload).toEqual({
      iss: `${TEST_ISSUER}/test`,
      iat: now(),
      exp: now() + 3600,
      sub: expect.stringMatching(/^ver_/),
      vct: expect.stringMatching(/^http:\/\/localhost:\d+\/vct\/asset-control$/),
      status: jwtParts(r.token).payload.status,
      cnf: { jwk: alice.publicJwk },
      type: "phone",
      channel: "whatsapp",
      method: "reverse_otp",
      env: "test",
      _sd: [expect.any(String), expect.any(String)],
      _sd_alg: "sha-256",
    });
    // the JWT beside it is bound to the same key
    expect(jwtParts(r.token).payload.cnf).toEqual({ jwk: alice.publicJwk });
    const verified = await verifierOf(Environment.TEST).verify(r.sdJwtVc!);
    expect(verified.payload).toMatchObject({ identifier: PHONE, external_user_id: "user-7", sub: payload.sub });
    // a test credential does not verify with the live key set
    await expect(verifierOf(Environment.LIVE).verify(r.sdJwtVc!)).rejects.toThrow();
  });

  it("without an external_user_id hides that with a decoy digest, and the live issuer is the issuer itself", async () => {
    const r = await issue({ externalUserId: undefined, scope: live, holderKey: undefined });
    const { payload } = jwtParts(r.sdJwtVc!.split("~")[0]);
    expect(payload.iss).toBe(TEST_ISSUER);
    expect(payload._sd).toHaveLength(2);
    expect(r.sdJwtVc!.split("~").filter(Boolean)).toHaveLength(2); // the JWT and one disclosure
    expect(payload.cnf).toBeUndefined();
    expect((await verifierOf(Environment.LIVE).verify(r.sdJwtVc!)).payload).toMatchObject({ identifier: PHONE });
  });

  it("holds no claim equal to the plain SHA-256 of the identifier (hex or base64url), in either token", async () => {
    const r = await issue();
    const plain = createHash("sha256").update(PHONE).digest();
    for (const token of [r.token, r.sdJwtVc!.split("~")[0]]) {
      const text = JSON.stringify(jwtParts(token).payload);
      expect(text).not.toContain(plain.toString("hex"));
      expect(text).not.toContain(plain.toString("base64url"));
      expect(text).not.toContain("37069199199");
    }
  });

  it("is the same credential again on a retry of the same proof id", async () => {
    const proofId = newId("verification", clock.now().getTime());
    const first = await issue({ proofId });
    expect(await issue({ proofId })).toEqual(first);
  });
});

describe("validate of a presentation", () => {
  it("accepts a key-bound presentation that discloses the identifier, and shows what was disclosed", async () => {
    const r = await issue();
    const p = await alice.present(r.sdJwtVc!, { identifier: true }, { aud: "https://rp.example", nonce: "n-1", iat: now() });
    // the OWF verifier accepts it too, with the same nonce
    expect((await verifierOf(Environment.TEST).verify(p, { keyBindingNonce: "n-1" })).kb).toBeDefined();
    const v = await validate(p, { audience: "https://rp.example", nonce: "n-1" });
    expect(v).toMatchObject({
      valid: true,
      format: ProofFormat.SD_JWT_VC,
      disclosedIdentifier: PHONE,
      holderBound: true,
      type: "phone",
      channel: "whatsapp",
      method: "reverse_otp",
      testMode: true,
    });
    expect(v.disclosedExternalUserId).toBeUndefined();
    expect(v.identifierHash).toBe("");
  });

  it("accepts one without the identifier, and shows no identifier", async () => {
    const r = await issue();
    const p = await alice.present(r.sdJwtVc!, { external_user_id: true }, { aud: "rp", nonce: "n-2", iat: now() });
    const v = await validate(p, { audience: "rp", nonce: "n-2" });
    expect(v).toMatchObject({ valid: true, disclosedExternalUserId: "user-7" });
    expect(v.disclosedIdentifier).toBeUndefined();
  });

  it("refuses a replay of the same key-binding JWT, and of a new one with the same nonce (once per credential and nonce)", async () => {
    const r = await issue();
    const p = await alice.present(r.sdJwtVc!, { identifier: true }, { aud: "rp", nonce: "n-3", iat: now() });
    expect(await validate(p, { audience: "rp", nonce: "n-3" })).toMatchObject({ valid: true });
    expect(await validate(p, { audience: "rp", nonce: "n-3" })).toMatchObject({ valid: false, reason: "holder_binding_invalid" });
    const again = await alice.present(r.sdJwtVc!, {}, { aud: "rp", nonce: "n-3", iat: now() });
    expect(await validate(again, { audience: "rp", nonce: "n-3" })).toMatchObject({ valid: false, reason: "holder_binding_invalid" });
    // a fresh nonce is a fresh presentation
    const fresh = await alice.present(r.sdJwtVc!, {}, { aud: "rp", nonce: "n-4", iat: now() });
    expect(await validate(fresh, { audience: "rp", nonce: "n-4" })).toMatchObject({ valid: true });
  });

  it("answers holder_binding_required without a key-binding JWT, without the audience and nonce, and for the bound proof's bare JWT", async () => {
    const r = await issue();
    const bare = await alice.present(r.sdJwtVc!, { identifier: true });
    expect(await validate(bare, { audience: "rp", nonce: "n-5" })).toMatchObject({ valid: false, reason: "holder_binding_required" });
    expect(await validate(bare)).toMatchObject({ valid: false, reason: "holder_binding_required" });
    const bound = await alice.present(r.sdJwtVc!, { identifier: true }, { aud: "rp", nonce: "n-6", iat: now() });
    expect(await validate(bound)).toMatchObject({ valid: false, reason: "holder_binding_required" });
    expect(await validate(r.token)).toMatchObject({ valid: false, reason: "holder_binding_required" });
  });

  it("answers holder_binding_required when the relying party asks for binding of a credential bound to no key", async () => {
    const r = await issue({ holderKey: undefined });
    const p = await alice.present(r.sdJwtVc!, { identifier: true });
    expect(await validate(p)).toMatchObject({ valid: true, holderBound: false, disclosedIdentifier: PHONE });
    expect(await validate(p, { audience: "rp", nonce: "n-7" })).toMatchObject({ valid: false, reason: "holder_binding_required" });
    expect(await validate(r.token, { audience: "rp", nonce: "n-7" })).toMatchObject({ valid: false, reason: "holder_binding_required" });
    // a key-binding JWT on a credential that names no key binds nothing
    const stray = await alice.present(r.sdJwtVc!, {}, { aud: "rp", nonce: "n-8", iat: now() });
    expect(await validate(stray)).toMatchObject({ valid: false, reason: "holder_binding_invalid" });
  });

  it.each([
    ["another audience", { aud: "other", nonce: "n" }, { audience: "rp", nonce: "n" }],
    ["another nonce", { aud: "rp", nonce: "other" }, { audience: "rp", nonce: "n" }],
    ["an iat six minutes old", { aud: "rp", nonce: "n", iat: -360 }, { audience: "rp", nonce: "n" }],
    ["an iat six minutes ahead", { aud: "rp", nonce: "n", iat: 360 }, { audience: "rp", nonce: "n" }],
  ])("answers holder_binding_invalid for a key-binding JWT with %s", async (_what, kb, asked) => {
    const r = await issue();
    const p = await alice.present(r.sdJwtVc!, { identifier: true }, { ...kb, iat: now() + ((kb as { iat?: number }).iat ?? 0) });
    expect(await validate(p, asked)).toMatchObject({ valid: false, reason: "holder_binding_invalid" });
  });

  it("answers holder_binding_invalid for a key-binding JWT by another key, or over other disclosures", async () => {
    const r = await issue();
    const mallory = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey;
    const stolen = await presentWith(mallory, r.sdJwtVc!, { identifier: true }, { aud: "rp", nonce: "n-9", iat: now() });
    expect(await validate(stolen, { audience: "rp", nonce: "n-9" })).toMatchObject({ valid: false, reason: "holder_binding_invalid" });
    // a disclosure dropped after the holder signed: the sd_hash no longer matches
    const p = await alice.present(r.sdJwtVc!, { identifier: true, external_user_id: true }, { aud: "rp", nonce: "n-10", iat: now() });
    const parts = p.split("~");
    const cut = [parts[0], parts[1], parts.at(-1)].join("~");
    expect(await validate(cut, { audience: "rp", nonce: "n-10" })).toMatchObject({ valid: false, reason: "holder_binding_invalid" });
  });

  it("answers malformed, never an error, for broken presentations, and invalid_signature for a changed one", async () => {
    const r = await issue({ holderKey: undefined });
    const [jwt, disclosure] = r.sdJwtVc!.split("~");
    const foreign = Buffer.from(JSON.stringify(["c2FsdA", "identifier", "+15555550100"])).toString("base64url");
    for (const bad of ["~", "a~b~", `${jwt}~not-base64!~`, `${jwt}~${foreign}~`, `${jwt}~${disclosure}~${disclosure}~`, `${r.token}~`]) {
      expect(await validate(bad), bad).toMatchObject({ valid: false, reason: "malformed" });
    }
    const [h, , s] = jwt.split(".");
    const changed = `${h}.${Buffer.from(JSON.stringify({ ...jwtParts(jwt).payload, type: "email" })).toString("base64url")}.${s}~`;
    expect(await validate(changed)).toMatchObject({ valid: false, reason: "invalid_signature" });
  });

  it("refuses a test credential for a live caller, and a revoked or suspended one", async () => {
    const r = await issue({ holderKey: undefined });
    const proofId = jwtParts(r.token).payload.sub;
    const p = await alice.present(r.sdJwtVc!, { identifier: true });
    expect(await validate(p, { scope: live })).toMatchObject({ valid: false, reason: "test_proof" });
    await svc.client.suspendProof({ scope: test, proofId, reason: "record_missing" });
    expect(await validate(p)).toMatchObject({ valid: false, reason: "suspended" });
    await expect(verifierOf(Environment.TEST).verify(p)).rejects.toThrow(/Status is not valid/);
    await svc.client.reinstateProof({ scope: test, proofId });
    expect(await validate(p)).toMatchObject({ valid: true });
    await svc.client.revokeProof({ scope: test, proofId, reason: "fraud" });
    expect(await validate(p)).toMatchObject({ valid: false, reason: "revoked" });
  });
});
