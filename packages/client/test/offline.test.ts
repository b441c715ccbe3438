// verifyProofOffline against the real stack's published key sets, status lists and revocation
// lists, played by an attacker: a test proof never passes as live (nor a live one as test), a
// holder-bound SD-JWT VC passes only as a key-bound presentation for this audience and nonce, a
// revoked proof fails once the cache expires, and a forged token or status URI gets nowhere. The
// keys are fetched once a day and the lists once per five minutes.
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { decodeJwt } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { holder } from "../../../test/support/sd-jwt.ts";
import { useStack, useTenant } from "../../../test/support/use-stack.ts";
import { createIcvClient, createProofVerifier, verifyProofOffline, type FetchLike } from "../src/index.ts";

const stack = useStack();
const t = useTenant(stack, "Offline");

/** A verifier whose fetches are counted by path, and whose clock the test moves. */
function counted() {
  const calls: string[] = [];
  let skew = 0;
  const rec: FetchLike = async (req, init) => {
    calls.push(new URL(req.url).pathname + new URL(req.url).search);
    return fetch(req, init);
  };
  const v = createProofVerifier({ baseUrl: stack.url, fetch: rec, now: () => Date.now() + skew });
  return { v, calls, advance: (ms: number) => (skew += ms) };
}

const test = () => createIcvClient({ baseUrl: stack.url, apiKey: t.testKey });
const live = () => createIcvClient({ baseUrl: stack.url, apiKey: t.liveKey });
let n = 0;

/** A test proof: create and test-verify with the test key (nothing about the asset was shown). */
async function testProof(extra: { proof_format?: "jwt" | "sd-jwt-vc"; holder_key?: Record<string, unknown> } = {}) {
  const icv = test();
  const id = (
    await icv.POST("/api/v1/verifications", { body: { type: "phone", channel: "telegram", identifier: `+3706940${String(n++).padStart(4, "0")}`, ...extra } })
  ).data!.id;
  const done = (await icv.POST("/api/v1/verifications/{id}/test-verify", { params: { path: { id } } })).data!;
  return { id, token: done.proof_token, sdJwtVc: done.proof_sd_jwt_vc };
}

/** A live proof: a wallet verification completed by the wallet's signature. */
async function liveProof() {
  const icv = live();
  const wallet = privateKeyToAccount(generatePrivateKey());
  const v = (await icv.POST("/api/v1/verifications", { body: { type: "wallet", channel: "ethereum", identifier: wallet.address } })).data!;
  const signed = await icv.POST("/api/v1/verifications/{id}/submit", {
    params: { path: { id: v.id } },
    body: { signature: await wallet.signMessage({ message: v.challenge!.message! }) },
  });
  expect(signed.data?.status).toBe("verified");
  return { id: v.id, token: signed.data!.proof!.token };
}

let testP: Awaited<ReturnType<typeof testProof>>;
let liveP: Awaited<ReturnType<typeof liveProof>>;
beforeAll(async () => {
  [testP, liveP] = await Promise.all([testProof(), liveProof()]);
});

describe("JWT proofs and the two key sets", () => {
  it("a live proof passes as live and not as test; a test proof passes as test and not as live", async () => {
    const { v } = counted();
    expect(await v.verify(liveP.token)).toMatchObject({ valid: true, format: "jwt", env: "live", claims: { sub: liveP.id, env: "live", method: "signature" } });
    expect(await v.verify(liveP.token, { env: "test" })).toMatchObject({ valid: false, reason: "live_proof" });
    expect(await v.verify(testP.token, { env: "test" })).toMatchObject({ valid: true, env: "test", claims: { sub: testP.id, method: "test" } });
    expect(await v.verify(testP.token)).toMatchObject({ valid: false, reason: "test_proof" });
    // the one-call form (its own shared cache per base URL) answers the same
    expect(await verifyProofOffline(testP.token, { baseUrl: stack.url })).toMatchObject({ valid: false, reason: "test_proof" });
    expect(await verifyProofOffline(liveP.token, { baseUrl: stack.url, env: "live" })).toMatchObject({ valid: true });
  });

  it("fetches each key set once a day and each status list once per five minutes, however many proofs it checks", async () => {
    const { v, calls, advance } = counted();
    for (let i = 0; i < 3; i++) expect((await v.verify(testP.token, { env: "test" })).valid).toBe(true);
    const count = (p: string) => calls.filter((c) => c.startsWith(p)).length;
    expect(count("/.well-known/jwks-test.json")).toBe(1);
    expect(count("/.well-known/jwks.json")).toBe(0);
    expect(count("/api/v1/proofs/status-lists/test-")).toBe(1);
    advance(5 * 60_000 + 1000);
    await v.verify(testP.token, { env: "test" });
    expect(count("/api/v1/proofs/status-lists/test-")).toBe(2);
    expect(count("/.well-known/jwks-test.json")).toBe(1);
    advance(24 * 3600_000);
    await v.verify(testP.token, { env: "test" });
    expect(count("/.well-known/jwks-test.json")).toBe(2);
  });

  it("a revoked proof fails as revoked once the cached status list is older than five minutes", async () => {
    const p = await testProof();
    const { v, advance } = counted();
    expect((await v.verify(p.token, { env: "test" })).valid).toBe(true);
    const r = await test().POST("/api/v1/proofs/{id}/revoke", { params: { path: { id: p.id } }, body: { reason: "fraud" } });
    expect(r.response.status).toBe(200);
    // within the five minutes the cached list still says valid (what "cached 5 min" means)
    expect((await v.verify(p.token, { env: "test" })).valid).toBe(true);
    advance(5 * 60_000 + 1000);
    expect(await v.verify(p.token, { env: "test" })).toMatchObject({ valid: false, reason: "revoked" });
    expect(await createProofVerifier({ baseUrl: stack.url }).verify(p.token, { env: "test" })).toMatchObject({ valid: false, reason: "revoked" });
  });

  it("refuses forgeries: a changed claim, alg none, an unknown kid, an expired proof, garbage and an oversized token", async () => {
    const { v, advance } = counted();
    const [h, p, s] = liveP.token.split(".");
    const claims = decodeJwt(liveP.token);
    const forged = Buffer.from(JSON.stringify({ ...claims, tenant_id: "ten_attacker" })).toString("base64url");
    expect(await v.verify(`${h}.${forged}.${s}`)).toMatchObject({ valid: false, reason: "invalid_signature" });
    // a test proof relabelled env live keeps its test key: still test_proof
    const [th, , ts] = testP.token.split(".");
    const relabelled = Buffer.from(JSON.stringify({ ...decodeJwt(testP.token), env: "live" })).toString("base64url");
    expect(await v.verify(`${th}.${relabelled}.${ts}`)).toMatchObject({ valid: false, reason: "test_proof" });
    const none = Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url");
    expect(await v.verify(`${none}.${p}.`)).toMatchObject({ valid: false, reason: "invalid_signature" });
    const otherKid = Buffer.from(JSON.stringify({ alg: "RS256", typ: "JWT", kid: "nobody" })).toString("base64url");
    expect(await v.verify(`${otherKid}.${p}.${s}`)).toMatchObject({ valid: false, reason: "unknown_key" });
    expect(await v.verify("garbage")).toMatchObject({ valid: false, reason: "malformed" });
    expect(await v.verify("x".repeat(20_000))).toMatchObject({ valid: false, reason: "malformed" });
    advance(((claims.exp as number) - Date.now() / 1000 + 3600) * 1000);
    expect(await v.verify(liveP.token)).toMatchObject({ valid: false, reason: "expired" });
  });
});

describe("SD-JWT VC", () => {
  const alice = holder();
  const mallory = holder();
  const now = () => Math.floor(Date.now() / 1000);

  it("a holder-bound test credential passes as a key-bound presentation for this audience and nonce, showing only what was disclosed", async () => {
    const p = await testProof({ proof_format: "sd-jwt-vc", holder_key: alice.publicJwk });
    expect(p.sdJwtVc).toEqual(expect.any(String));
    const { v } = counted();
    const shown = await alice.present(p.sdJwtVc!, { identifier: true }, { aud: "https://rp.example", nonce: "n-1", iat: now() });
    const ok = await v.verify(shown, { env: "test", audience: "https://rp.example", nonce: "n-1" });
    expect(ok).toMatchObject({
      valid: true,
      format: "sd-jwt-vc",
      env: "test",
      holderBinding: true,
      claims: { identifier: expect.stringMatching(/^\+3706940/) },
    });
    const hidden = await alice.present(p.sdJwtVc!, {}, { aud: "https://rp.example", nonce: "n-2", iat: now() });
    const r = await v.verify(hidden, { env: "test", audience: "https://rp.example", nonce: "n-2" });
    expect(r.valid && "identifier" in r.claims).toBe(false);
    // never as live: its issuer is the test issuer and its key is in the test set
    expect(await v.verify(shown, { env: "live", audience: "https://rp.example", nonce: "n-1" })).toMatchObject({ valid: false, reason: "test_proof" });
  });

  it("refuses a holder-bound credential without key binding, for another audience or nonce, signed by another key, or stale; and its bare JWT", async () => {
    const p = await testProof({ proof_format: "sd-jwt-vc", holder_key: alice.publicJwk });
    const { v } = counted();
    const o = { env: "test" as const, audience: "rp", nonce: "x-1" };
    expect(await v.verify(p.sdJwtVc!, o)).toMatchObject({ valid: false, reason: "holder_binding_required" });
    const good = await alice.present(p.sdJwtVc!, {}, { aud: "rp", nonce: "x-1", iat: now() });
    expect(await v.verify(good, { env: "test" })).toMatchObject({ valid: false, reason: "holder_binding_required" });
    expect(await v.verify(good, { ...o, audience: "other" })).toMatchObject({ valid: false, reason: "holder_binding_invalid" });
    expect(await v.verify(good, { ...o, nonce: "x-2" })).toMatchObject({ valid: false, reason: "holder_binding_invalid" });
    expect(await v.verify(await mallory.present(p.sdJwtVc!, {}, { aud: "rp", nonce: "x-1", iat: now() }), o)).toMatchObject({
      valid: false,
      reason: "holder_binding_invalid",
    });
    expect(await v.verify(await alice.present(p.sdJwtVc!, {}, { aud: "rp", nonce: "x-1", iat: now() - 600 }), o)).toMatchObject({
      valid: false,
      reason: "holder_binding_invalid",
    });
    // the JWT beside it carries the same cnf: it passes only as a presentation
    expect(await v.verify(p.token, { env: "test" })).toMatchObject({ valid: false, reason: "holder_binding_required" });
  });

  it("an unbound credential passes without key binding; revoked, it fails; a status URI off the service is never fetched", async () => {
    const p = await testProof({ proof_format: "sd-jwt-vc" });
    const { v, calls } = counted();
    expect(await v.verify(p.sdJwtVc!, { env: "test" })).toMatchObject({ valid: true, holderBinding: false });
    await test().POST("/api/v1/proofs/{id}/revoke", { params: { path: { id: p.id } }, body: { reason: "other" } });
    expect(await createProofVerifier({ baseUrl: stack.url }).verify(p.sdJwtVc!, { env: "test" })).toMatchObject({ valid: false, reason: "revoked" });
    // a changed disclosure breaks the digest; a status list elsewhere breaks the signature first
    const parts = p.sdJwtVc!.split("~");
    const fake = Buffer.from(JSON.stringify(["salt", "identifier", "+10000000000"])).toString("base64url");
    expect(await v.verify([parts[0], fake, ""].join("~"), { env: "test" })).toMatchObject({ valid: false, reason: "malformed" });
    // a status list is fetched only from the service's origin and its status-lists path
    await expect(v.documents.statusList("http://169.254.169.254/api/v1/proofs/status-lists/test-1")).rejects.toThrow(/not one the service publishes/);
    await expect(v.documents.statusList(`${new URL(stack.url).origin}/admin`)).rejects.toThrow(/not one the service publishes/);
    expect(calls.every((c) => c.startsWith("/.well-known/") || c.startsWith("/api/v1/proofs/status-lists/"))).toBe(true);
  });
});
