// verifyProofOffline in the cases the real stack does not make on demand, against a local stand-in
// that publishes what the service publishes (issuer metadata, two key sets, the signed revocation
// lists) with keys this test holds: a proof from before status lists checked in the revocation
// list, a forged or wrongly signed list, a status URI on another host, the service away, and a
// key rotated in while the key set is cached.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { CompactSign, exportJWK, generateKeyPair, SignJWT, type JWK } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createProofVerifier, type FetchLike } from "../src/index.ts";

const ISSUER = "https://icv.example";
type Key = Awaited<ReturnType<typeof generateKeyPair>>["privateKey"];
const keys: Record<string, { kid: string; privateKey: Key; jwk: JWK }> = {};
let server: http.Server;
let base: string;
let published: Record<"live" | "test", string[]>;
let revoked: string[] = [];
let listSigner = "live-1";
let down = false;
const hits: string[] = [];

async function key(kid: string) {
  const { privateKey, publicKey } = await generateKeyPair("RS256", { extractable: true });
  keys[kid] = { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: "RS256", use: "sig" } };
}

const sign = (kid: string, claims: Record<string, unknown>, exp = "1h") =>
  new SignJWT(claims).setProtectedHeader({ alg: "RS256", typ: "JWT", kid }).setIssuer(ISSUER).setIssuedAt().setExpirationTime(exp).sign(keys[kid].privateKey);

beforeAll(async () => {
  await Promise.all(["live-1", "live-2", "test-1"].map(key));
  published = { live: ["live-1"], test: ["test-1"] };
  server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    hits.push(url.pathname + url.search);
    const json = (body: unknown, status = 200) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    if (down) return json({ error: { code: "internal_error", message: "down" } }, 503);
    const env = url.pathname.endsWith("/test") || url.pathname.endsWith("-test.json") || url.searchParams.get("env") === "test" ? "test" : "live";
    if (url.pathname.startsWith("/.well-known/jwt-vc-issuer"))
      return json({ issuer: env === "live" ? ISSUER : `${ISSUER}/test`, jwks_uri: `${ISSUER}/.well-known/${env === "live" ? "jwks.json" : "jwks-test.json"}` });
    if (url.pathname.startsWith("/.well-known/jwks")) return json({ keys: published[env].map((k) => keys[k].jwk) });
    if (url.pathname === "/api/v1/proofs/revoked") {
      const body = {
        revoked: revoked.map((id) => ({ proof_id: id, revoked_at: new Date().toISOString(), reason: "fraud" })),
        generated_at: new Date().toISOString(),
      };
      const signature = await new CompactSign(new TextEncoder().encode(JSON.stringify(body)))
        .setProtectedHeader({ alg: "RS256", kid: env === "live" ? listSigner : "test-1" })
        .sign(keys[env === "live" ? listSigner : "test-1"].privateKey);
      return json({ ...body, signature, count: body.revoked.length });
    }
    json({ error: { code: "not_found", message: "no" } }, 404);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

function verifier() {
  let skew = 0;
  const seen: string[] = [];
  const rec: FetchLike = (req, init) => {
    seen.push(req.url);
    return fetch(req, init);
  };
  return { v: createProofVerifier({ baseUrl: base, fetch: rec, now: () => Date.now() + skew }), seen, advance: (ms: number) => (skew += ms) };
}

describe("a proof from before status lists", () => {
  it("is valid while its id is not in the signed revocation list of its environment, and revoked once it is", async () => {
    const token = await sign("live-1", { jti: "ver_old1", sub: "ver_old1", env: "live", method: "otp" });
    revoked = [];
    expect(await verifier().v.verify(token)).toMatchObject({ valid: true, format: "jwt", claims: { sub: "ver_old1" } });
    revoked = ["ver_old1"];
    expect(await verifier().v.verify(token)).toMatchObject({ valid: false, reason: "revoked" });
    revoked = [];
  });

  it("is never valid on a revocation list signed by a key outside its set (a test key on the live list), or when the service is away", async () => {
    const token = await sign("live-1", { jti: "ver_old2", sub: "ver_old2", env: "live" });
    listSigner = "test-1";
    expect(await verifier().v.verify(token)).toMatchObject({ valid: false, reason: "unavailable", detail: expect.stringMatching(/test set/) });
    listSigner = "live-2"; // a key nobody published
    expect(await verifier().v.verify(token)).toMatchObject({ valid: false, reason: "unavailable", detail: expect.stringMatching(/neither key set/) });
    listSigner = "live-1";
    down = true;
    expect(await verifier().v.verify(token)).toMatchObject({ valid: false, reason: "unavailable" });
    down = false;
    expect(await verifier().v.verify(token)).toMatchObject({ valid: true });
  });
});

describe("what a token can make the verifier fetch", () => {
  it("a status URI on another host, or off the status-lists path, is refused unfetched (unavailable, never valid)", async () => {
    const { v, seen } = verifier();
    for (const uri of [
      "http://169.254.169.254/api/v1/proofs/status-lists/live-1",
      `${ISSUER}/admin/metrics`,
      `${ISSUER}/api/v1/proofs/status-lists/live-1?x=1`,
    ]) {
      const token = await sign("live-1", { jti: "ver_s", sub: "ver_s", env: "live", status: { status_list: { idx: 3, uri } } });
      expect(await v.verify(token)).toMatchObject({ valid: false, reason: "unavailable", detail: expect.stringMatching(/not one the service publishes/) });
    }
    expect(seen.every((u) => u.startsWith(base))).toBe(true);
  });
});

describe("key rotation while the key set is cached", () => {
  it("a proof by a newly published key fetches the set again (at most once a minute), and then passes", async () => {
    const { v, seen, advance } = verifier();
    expect((await v.verify(await sign("live-1", { jti: "ver_a", sub: "ver_a", env: "live" }))).valid).toBe(true);
    published.live = ["live-1", "live-2"];
    const rotated = await sign("live-2", { jti: "ver_b", sub: "ver_b", env: "live" });
    const jwksFetches = () => seen.filter((u) => u.endsWith("/.well-known/jwks.json")).length;
    // the set was fetched less than a minute ago: no new fetch, the kid is unknown for now
    expect(await v.verify(rotated)).toMatchObject({ valid: false, reason: "unknown_key" });
    expect(jwksFetches()).toBe(1);
    advance(61_000);
    expect(await v.verify(rotated)).toMatchObject({ valid: true });
    expect(jwksFetches()).toBe(2);
    published.live = ["live-1"];
  });

  it("a live-set key signing a test-env claim is test_proof (the old shared key), and a wrong issuer is wrong_issuer", async () => {
    const { v } = verifier();
    expect(await v.verify(await sign("live-1", { jti: "ver_t", sub: "ver_t", env: "test" }))).toMatchObject({ valid: false, reason: "test_proof" });
    const other = await new SignJWT({ env: "live" })
      .setProtectedHeader({ alg: "RS256", kid: "live-1" })
      .setIssuer("https://elsewhere.example")
      .setExpirationTime("1h")
      .sign(keys["live-1"].privateKey);
    expect(await v.verify(other)).toMatchObject({ valid: false, reason: "wrong_issuer" });
  });
});
