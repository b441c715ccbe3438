// Proofs that show no more than they must (issue 26), through the public API as a tenant and a
// relying party see them: SD-JWT VCs checked by the OWF verifier against our published key set
// and live status list, presented with and without the identifier and with a key binding;
// every refusal of validate; the salted identifier hash (no claim of any token is the plain
// SHA-256 of the identifier); revocation in the status list; the issuer's metadata; and
// suspension, which the webhooks and the event stream deliver.
import { createHash, generateKeyPairSync } from "node:crypto";
import { decodeJwt } from "jose";
import { getListFromStatusListJWT } from "@sd-jwt/jwt-status-list";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import { createLogger, parseConfig, rpcClient, serviceIdentity } from "@icv/platform";
import { expectError, waitFor } from "../support/expect-error.ts";
import { startReceiver, type Receiver } from "../support/receiver.ts";
import { holder, jwtParts, owfVerifier } from "../support/sd-jwt.ts";
import { api, startStack, type Stack, type TenantKeys } from "../support/stack.ts";

let stack: Stack;
let t: TenantKeys;
let rx: Receiver;
beforeAll(async () => {
  rx = await startReceiver(200);
  stack = await startStack({ ALLOW_PRIVATE_TARGETS: "true" });
  t = await stack.tenant("Credentials");
  await stack.admin.setWebhookEndpoint({ tenantId: t.tenantId, environment: Environment.TEST, url: rx.url }, { headers: stack.adminHeaders });
});
afterAll(async () => {
  await stack?.close();
  await rx?.close();
});

const c = () => api(stack.url, t.testKey);
const pub = () => api(stack.url);
const alice = holder();
const now = () => Math.floor(Date.now() / 1000);
let n = 0;
const nextPhone = () => `+3706920${String(n++).padStart(4, "0")}`;

/** The status list of a proof, fetched at its uri's path from this stack (PUBLIC_BASE_URL is not set here). */
const fetchList = async (uri: string) => {
  const r = await fetch(stack.url + new URL(uri).pathname);
  expect(r.headers.get("content-type")).toMatch(/^application\/statuslist\+jwt/);
  return r.text();
};

/** A relying party's OWF verifier for test credentials: the key set named by the test issuer's metadata, the live status list. */
async function testVerifier() {
  const meta = (await pub().get("/.well-known/jwt-vc-issuer/test")).body as { issuer: string; jwks_uri: string };
  const keys = async () => (await pub().get(new URL(meta.jwks_uri).pathname)).body.keys;
  return { meta, verifier: owfVerifier(keys, fetchList) };
}

/** A verified test proof in the given format (create + test-verify), with what test-verify answered. */
async function proof(body: Record<string, unknown> = {}) {
  const identifier = nextPhone();
  const v = await c().post("/api/v1/verifications", { type: "phone", channel: "telegram", identifier, external_user_id: "user-26", ...body });
  expect(v.status, JSON.stringify(v.body)).toBe(201);
  const done = await c().post(`/api/v1/verifications/${v.body.id}/test-verify`);
  expect(done.status).toBe(200);
  return { id: v.body.id as string, identifier, created: v.body, done: done.body };
}

const validate = (body: Record<string, unknown>) => c().post("/api/v1/proofs/validate", body);

describe("an SD-JWT VC through the API", () => {
  it("is issued beside the JWT when asked, shown on the verification, and verified by the OWF verifier against jwks-test and the live status list", async () => {
    const p = await proof({ proof_format: "sd-jwt-vc", holder_key: alice.publicJwk });
    expect(p.created).toMatchObject({ proof_format: "sd-jwt-vc", holder_key: alice.publicJwk });
    expect(p.done).toMatchObject({ identifier_salt: expect.stringMatching(/^[0-9a-f]{32}$/), proof_sd_jwt_vc: expect.any(String) });
    const got = (await c().get(`/api/v1/verifications/${p.id}`)).body;
    expect(got.proof).toEqual({
      token: p.done.proof_token,
      expires_at: p.done.proof_expires_at,
      identifier_salt: p.done.identifier_salt,
      sd_jwt_vc: p.done.proof_sd_jwt_vc,
    });
    const { meta, verifier } = await testVerifier();
    expect(meta.issuer).toMatch(/\/test$/);
    const checked = await verifier.verify(p.done.proof_sd_jwt_vc);
    expect(checked.payload).toMatchObject({ iss: meta.issuer, identifier: p.identifier, external_user_id: "user-26", type: "phone", method: "test" });
    // the type metadata is served at the vct
    const vct = new URL(checked.payload.vct as string);
    expect((await pub().get(vct.pathname)).body).toMatchObject({ vct: checked.payload.vct, name: "Asset control" });
    // the live issuer's metadata names the live key set only
    expect((await pub().get("/.well-known/jwt-vc-issuer")).body).toEqual({
      issuer: expect.not.stringMatching(/\/test$/),
      jwks_uri: expect.stringMatching(/\/\.well-known\/jwks\.json$/),
    });
  });

  it("is presented with the identifier, without it, and with a key binding; validate shows only what was disclosed", async () => {
    const p = await proof({ proof_format: "sd-jwt-vc", holder_key: alice.publicJwk });
    const withId = await alice.present(p.done.proof_sd_jwt_vc, { identifier: true }, { aud: "https://rp.example", nonce: "e2e-1", iat: now() });
    const a = await validate({ proof_token: withId, audience: "https://rp.example", nonce: "e2e-1", identifier: p.identifier.replace("+370", "+370 ") });
    expect(a.status).toBe(200);
    expect(a.body).toEqual({
      valid: true,
      verification: {
        id: p.id,
        type: "phone",
        channel: "telegram",
        verified_at: expect.any(String),
        expires_at: p.done.proof_expires_at,
        test_mode: true,
        method: "test",
        proof_format: "sd-jwt-vc",
        identifier: p.identifier,
        holder_binding: true,
      },
    });
    const without = await alice.present(p.done.proof_sd_jwt_vc, {}, { aud: "https://rp.example", nonce: "e2e-2", iat: now() });
    const b = await validate({ proof_token: without, audience: "https://rp.example", nonce: "e2e-2" });
    expect(b.body.valid).toBe(true);
    expect(b.body.verification).not.toHaveProperty("identifier");
    expect(b.body.verification).not.toHaveProperty("external_user_id");
    const eui = await alice.present(p.done.proof_sd_jwt_vc, { external_user_id: true }, { aud: "https://rp.example", nonce: "e2e-3", iat: now() });
    expect((await validate({ proof_token: eui, audience: "https://rp.example", nonce: "e2e-3" })).body.verification).toMatchObject({
      external_user_id: "user-26",
    });
    // asked about the identifier, a presentation that hides it says so
    const hidden = await alice.present(p.done.proof_sd_jwt_vc, {}, { aud: "https://rp.example", nonce: "e2e-4", iat: now() });
    expect((await validate({ proof_token: hidden, audience: "https://rp.example", nonce: "e2e-4", identifier: p.identifier })).body).toMatchObject({
      valid: false,
      reason: "identifier_not_disclosed",
    });
    const other = await alice.present(p.done.proof_sd_jwt_vc, { identifier: true }, { aud: "https://rp.example", nonce: "e2e-5", iat: now() });
    expect((await validate({ proof_token: other, audience: "https://rp.example", nonce: "e2e-5", identifier: "+37069299999" })).body).toMatchObject({
      valid: false,
      reason: "identifier_mismatch",
    });
  });

  it("refuses every way around the key binding: none, a replay, another audience, another key, the bare JWT", async () => {
    const p = await proof({ proof_format: "sd-jwt-vc", holder_key: alice.publicJwk });
    const sd = p.done.proof_sd_jwt_vc as string;
    const reason = async (body: Record<string, unknown>) => {
      const r = await validate(body);
      expect(r.status).toBe(200);
      return r.body.valid ? "valid" : r.body.reason;
    };
    expect(await reason({ proof_token: await alice.present(sd, { identifier: true }), audience: "rp", nonce: "x-1" })).toBe("holder_binding_required");
    expect(await reason({ proof_token: p.done.proof_token })).toBe("holder_binding_required");
    const ok = await alice.present(sd, { identifier: true }, { aud: "rp", nonce: "x-2", iat: now() });
    expect(await reason({ proof_token: ok })).toBe("holder_binding_required");
    expect(await reason({ proof_token: ok, audience: "rp", nonce: "x-2" })).toBe("valid");
    expect(await reason({ proof_token: ok, audience: "rp", nonce: "x-2" })).toBe("holder_binding_invalid"); // replayed to the same verifier
    expect(await reason({ proof_token: await alice.present(sd, {}, { aud: "other", nonce: "x-3", iat: now() }), audience: "rp", nonce: "x-3" })).toBe(
      "holder_binding_invalid",
    );
    const mallory = holder();
    expect(await reason({ proof_token: await mallory.present(sd, {}, { aud: "rp", nonce: "x-4", iat: now() }), audience: "rp", nonce: "x-4" })).toBe(
      "holder_binding_invalid",
    );
    expect(await reason({ proof_token: await alice.present(sd, {}, { aud: "rp", nonce: "x-5", iat: now() - 600 }), audience: "rp", nonce: "x-5" })).toBe(
      "holder_binding_invalid",
    );
  });

  it("answers malformed for a broken presentation (never a 5xx), 413 for an oversized one, and validation_error for a bad holder_key", async () => {
    const p = await proof({ proof_format: "sd-jwt-vc" });
    for (const bad of ["~", "a~b~c", `${p.done.proof_sd_jwt_vc}${"A".repeat(20)}~`, `${p.done.proof_sd_jwt_vc.split("~")[0]}~W10~`]) {
      const r = await validate({ proof_token: bad });
      expect(r.status, bad).toBe(200);
      expect(r.body).toMatchObject({ valid: false, reason: "malformed" });
    }
    expectError(await validate({ proof_token: `${p.done.proof_sd_jwt_vc}${"A".repeat(8200)}` }), 413, "payload_too_large");
    const rsa1024 = generateKeyPairSync("rsa", { modulusLength: 1024 }).publicKey.export({ format: "jwk" });
    const ecPrivate = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ format: "jwk" });
    for (const holder_key of [
      ecPrivate,
      rsa1024,
      { kty: "oct", k: "c2VjcmV0" },
      { ...alice.publicJwk, y: alice.publicJwk.x },
      { kty: "EC", crv: "P-384", x: "a", y: "b" },
    ]) {
      const r = await c().post("/api/v1/verifications", { type: "phone", channel: "telegram", identifier: nextPhone(), proof_format: "sd-jwt-vc", holder_key });
      expectError(r, 400, "validation_error");
    }
    expectError(
      await c().post("/api/v1/verifications", { type: "phone", channel: "telegram", identifier: nextPhone(), proof_format: "vc" }),
      400,
      "validation_error",
    );
  });
});

describe("a verification request's asset", () => {
  it("asks for an SD-JWT VC per asset; the request's and the verification's webhooks carry it beside the JWT", async () => {
    const identifier = nextPhone();
    const r = await c().post("/api/v1/verification-requests", {
      assets: [{ type: "phone", identifier, channel: "telegram", proof_format: "sd-jwt-vc", holder_key: alice.publicJwk }],
      external_user_id: "user-26",
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.assets[0]).toMatchObject({ proof_format: "sd-jwt-vc", holder_key: alice.publicJwk });
    const vid = r.body.assets[0].verification_id;
    const done = (await c().post(`/api/v1/verifications/${vid}/test-verify`)).body;
    expect(done.proof_sd_jwt_vc).toEqual(expect.any(String));
    const body = async (event: string) =>
      JSON.parse(String((await waitFor(async () => rx.requests.find((q) => q.body.includes(`"${event}"`) && q.body.includes(vid)), 5000))!.body));
    expect((await body("verification_request.completed")).proofs).toEqual([
      {
        asset_index: 0,
        type: "phone",
        verification_id: vid,
        proof_token: done.proof_token,
        expires_at: done.proof_expires_at,
        sd_jwt_vc: done.proof_sd_jwt_vc,
        identifier_salt: done.identifier_salt,
      },
    ]);
    expect((await body("verification.completed")).proof).toEqual({
      token: done.proof_token,
      expires_at: done.proof_expires_at,
      identifier_salt: done.identifier_salt,
      sd_jwt_vc: done.proof_sd_jwt_vc,
    });
    const bad = await c().post("/api/v1/verification-requests", {
      assets: [{ type: "phone", proof_format: "sd-jwt-vc", holder_key: { kty: "oct", k: "c2VjcmV0" } }],
    });
    expect(expectError(bad, 400, "validation_error").details[0].field).toBe("assets[0].holder_key");
  });
});

describe("the JWT's identifier hash", () => {
  it("is salted: the answer's salt gives it, validate with the identifier still works, and no claim of any token is the identifier's plain SHA-256", async () => {
    const p = await proof({ proof_format: "sd-jwt-vc" });
    const claims = decodeJwt(p.done.proof_token);
    const salted = createHash("sha256").update(Buffer.from(p.done.identifier_salt, "hex")).update(p.identifier).digest("hex");
    expect(claims.identifier_hash).toBe(salted);
    expect((await validate({ proof_token: p.done.proof_token, identifier: p.identifier })).body.valid).toBe(true);
    expect((await validate({ proof_token: p.done.proof_token, identifier: "+37069299999" })).body).toMatchObject({
      valid: false,
      reason: "identifier_mismatch",
    });
    const plain = createHash("sha256").update(p.identifier).digest();
    const list = await fetchList((claims.status as { status_list: { uri: string } }).status_list.uri);
    for (const token of [p.done.proof_token, p.done.proof_sd_jwt_vc.split("~")[0], list]) {
      const text = JSON.stringify(jwtParts(token));
      expect(text).not.toContain(plain.toString("hex"));
      expect(text).not.toContain(plain.toString("base64url"));
      expect(text).not.toContain(p.identifier.slice(1));
    }
    // two proofs of one identifier share no hash
    const again = await proof();
    expect(decodeJwt(again.done.proof_token).identifier_hash).not.toBe(claims.identifier_hash);
  });
});

describe("the status list", () => {
  it("shows a revoked proof of either format as revoked within 5 s, and the status object and validate agree", async () => {
    for (const format of ["jwt", "sd-jwt-vc"]) {
      const p = await proof({ proof_format: format });
      const { status_list } = decodeJwt(p.done.proof_token).status as { status_list: { idx: number; uri: string } };
      expect(getListFromStatusListJWT(await fetchList(status_list.uri)).getStatus(status_list.idx)).toBe(0);
      expect((await c().post(`/api/v1/proofs/${p.id}/revoke`, { reason: "fraud" })).status).toBe(200);
      const revoked = await waitFor(async () => getListFromStatusListJWT(await fetchList(status_list.uri)).getStatus(status_list.idx) === 1, 5000);
      expect(revoked, format).toBe(true);
      expect((await validate({ proof_token: p.done.proof_token })).body).toMatchObject({ valid: false, reason: "revoked" });
    }
    // an unknown list is 404; a list is served with an ETag and revalidated
    expectError(await pub().get("/api/v1/proofs/status-lists/live-99999"), 404, "not_found");
    const first = await fetch(`${stack.url}/api/v1/proofs/status-lists/test-0`);
    const etag = first.headers.get("etag")!;
    expect((await fetch(`${stack.url}/api/v1/proofs/status-lists/test-0`, { headers: { "if-none-match": etag } })).status).toBe(304);
  });
});

describe("a suspended proof", () => {
  it("is suspended, then reinstated: status object, validate, status list, the verification's status, its webhooks and its event stream", async () => {
    const p = await proof({ proof_format: "sd-jwt-vc" });
    const { status_list } = decodeJwt(p.done.proof_token).status as { status_list: { idx: number; uri: string } };
    const stream = await fetch(`${stack.url}/api/v1/verifications/${p.id}/events`, { headers: { authorization: `Bearer ${t.testKey}` } });
    const reader = stream.body!.getReader();
    // the proof service's SuspendProof, called as the verification service does (the domain re-checks of issue 27 will)
    const identity = await serviceIdentity(parseConfig(stack.env), "verification", createLogger({ level: "silent" }));
    const proofs = rpcClient(ProofService, stack.services.proof.url, identity);
    const scope = { tenantId: t.tenantId, environment: Environment.TEST };
    try {
      await proofs.suspendProof({ scope, proofId: p.id, reason: "record_missing" });
      const status = (await c().get(`/api/v1/proofs/${p.id}/status`)).body;
      expect(status).toMatchObject({
        status: "suspended",
        is_valid: false,
        is_suspended: true,
        suspended_reason: "record_missing",
        suspended_at: expect.any(String),
      });
      expect((await validate({ proof_token: p.done.proof_token })).body).toMatchObject({ valid: false, reason: "suspended" });
      expect(getListFromStatusListJWT(await fetchList(status_list.uri)).getStatus(status_list.idx)).toBe(2);
      // the verification follows its proof (the proof events' consumer), with its events
      const v = await waitFor(async () => {
        const r = (await c().get(`/api/v1/verifications/${p.id}`)).body;
        return r.status === "suspended" ? r : undefined;
      }, 5000);
      expect(v).toMatchObject({ status: "suspended", suspended_reason: "record_missing", proof: { token: p.done.proof_token } });
      const hook = await waitFor(
        async () => rx.requests.find((r) => String(r.body).includes('"verification.suspended"') && String(r.body).includes(p.id)),
        5000,
      );
      expect(JSON.parse(String(hook!.body))).toMatchObject({
        event: "verification.suspended",
        test: true,
        verification_id: p.id,
        status: "suspended",
        reason: "record_missing",
        suspended_at: status.suspended_at,
        proof: { token: p.done.proof_token, identifier_salt: p.done.identifier_salt, sd_jwt_vc: p.done.proof_sd_jwt_vc },
      });
      await proofs.reinstateProof({ scope, proofId: p.id });
      expect((await validate({ proof_token: p.done.proof_token })).body.valid).toBe(true);
      expect(getListFromStatusListJWT(await fetchList(status_list.uri)).getStatus(status_list.idx)).toBe(0);
      expect(await waitFor(async () => (await c().get(`/api/v1/verifications/${p.id}`)).body.status === "verified", 5000)).toBe(true);
      expect(
        await waitFor(async () => rx.requests.some((r) => String(r.body).includes('"verification.reinstated"') && String(r.body).includes(p.id)), 5000),
      ).toBe(true);
      // the event stream said both
      let text = "";
      const decoder = new TextDecoder();
      while (!/"status":"verified","previous_status":"suspended"/.test(text)) text += decoder.decode((await reader.read()).value);
      expect(text).toMatch(/"status":"suspended","previous_status":"verified","changed_at":"[^"]+","suspended_at":"[^"]+","suspended_reason":"record_missing"/);
    } finally {
      identity.close();
      await reader.cancel();
    }
  });
});
