import { createHash, randomBytes } from "node:crypto";
import { SignJWT, compactVerify, decodeJwt, decodeProtectedHeader, importJWK } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { newSigningKey, type SigningKey } from "../src/keys.ts";
import { jwtProfile, PROOF_SCHEMA_VERSION, signDocument, signProof, VerifiedTokens, verifyProof, type ProofClaims } from "../src/tokens.ts";

const ISSUER = "https://icv.example.com";
const NOW = new Date("2026-02-04T10:00:00.000Z");
const iat = Math.floor(NOW.getTime() / 1000);

let key: SigningKey;
let stranger: SigningKey;
const keyFor = (kid: string) => Promise.resolve(kid === key.kid ? key : undefined);

beforeAll(async () => {
  const kek = randomBytes(32);
  [{ key }, { key: stranger }] = await Promise.all([newSigningKey(2048, kek, "live"), newSigningKey(2048, kek, "live")]);
});

const claims = (over: Partial<ProofClaims> = {}): ProofClaims => ({
  iss: ISSUER,
  sub: "ver_01JABCDEFGHJKMNPQRSTVWXYZ0",
  jti: "ver_01JABCDEFGHJKMNPQRSTVWXYZ0",
  iat,
  exp: iat + 3600,
  proof_schema_version: PROOF_SCHEMA_VERSION,
  tenant_id: "ten_1",
  env: "test",
  type: "phone",
  channel: "telegram",
  identifier_hash: createHash("sha256").update("+37069199199").digest("hex"),
  verified_at: NOW.toISOString(),
  ...over,
});

const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");

describe("signProof", () => {
  it("signs exactly the given claims with header {alg: RS256, typ: JWT, kid}", async () => {
    const c = claims({ external_user_id: "user-42" });
    const token = await signProof(key, c);
    expect(decodeProtectedHeader(token)).toEqual({ alg: "RS256", typ: "JWT", kid: key.kid });
    expect(decodeJwt(token)).toEqual(c);
    expect(PROOF_SCHEMA_VERSION).toBe("1.0");
  });

  it("has no external_user_id member when none is given", async () => {
    const payload = decodeJwt(await signProof(key, claims()));
    expect("external_user_id" in payload).toBe(false);
  });

  it("verifies with the public key alone", async () => {
    const token = await signProof(key, claims());
    const { payload } = await compactVerify(token, key.publicKey);
    expect(JSON.parse(new TextDecoder().decode(payload)).sub).toBe(claims().sub);
  });
});

describe("verifyProof", () => {
  it("accepts a good token and answers its claims", async () => {
    const token = await signProof(key, claims());
    const v = await verifyProof(token, jwtProfile(ISSUER), keyFor, NOW);
    expect(v).toEqual({ valid: true, claims: claims(), keyEnv: "live" });
  });

  it("expired: at and after exp", async () => {
    const token = await signProof(key, claims({ exp: iat + 60 }));
    expect(await verifyProof(token, jwtProfile(ISSUER), keyFor, new Date(NOW.getTime() + 59_000))).toMatchObject({ valid: true });
    expect(await verifyProof(token, jwtProfile(ISSUER), keyFor, new Date(NOW.getTime() + 61_000))).toMatchObject({ valid: false, reason: "expired" });
  });

  it("invalid_signature: a payload changed after signing", async () => {
    const [h, , s] = (await signProof(key, claims())).split(".");
    const forged = `${h}.${b64({ ...claims(), tenant_id: "ten_attacker" })}.${s}`;
    expect(await verifyProof(forged, jwtProfile(ISSUER), keyFor, NOW)).toMatchObject({ valid: false, reason: "invalid_signature" });
  });

  it("invalid_signature: signed by another key under this key's kid", async () => {
    const token = await new SignJWT({ ...claims() }).setProtectedHeader({ alg: "RS256", typ: "JWT", kid: key.kid }).sign(stranger.privateKey);
    expect(await verifyProof(token, jwtProfile(ISSUER), keyFor, NOW)).toMatchObject({ valid: false, reason: "invalid_signature" });
  });

  it("invalid_signature: alg none", async () => {
    const token = `${b64({ alg: "none", typ: "JWT", kid: key.kid })}.${b64(claims())}.`;
    expect(await verifyProof(token, jwtProfile(ISSUER), keyFor, NOW)).toMatchObject({ valid: false, reason: "invalid_signature" });
  });

  it("invalid_signature: HS256 keyed with the public key (algorithm confusion)", async () => {
    const secret = Buffer.from(key.publicKey.export({ format: "pem", type: "spki" }) as string);
    const token = await new SignJWT({ ...claims() }).setProtectedHeader({ alg: "HS256", typ: "JWT", kid: key.kid }).sign(secret);
    expect(await verifyProof(token, jwtProfile(ISSUER), keyFor, NOW)).toMatchObject({ valid: false, reason: "invalid_signature" });
  });

  it("unknown_key: a kid this service never had, or no kid", async () => {
    const foreign = await signProof(stranger, claims());
    expect(await verifyProof(foreign, jwtProfile(ISSUER), keyFor, NOW)).toMatchObject({ valid: false, reason: "unknown_key" });
    const noKid = await new SignJWT({ ...claims() }).setProtectedHeader({ alg: "RS256", typ: "JWT" }).sign(key.privateKey);
    expect(await verifyProof(noKid, jwtProfile(ISSUER), keyFor, NOW)).toMatchObject({ valid: false, reason: "unknown_key" });
  });

  it.each([
    ["garbage", "not a token"],
    ["empty", ""],
    ["three garbage parts", "a.b.c"],
    ["four parts", "a.b.c.d"],
    ["a header that is not JSON", `${Buffer.from("{nope").toString("base64url")}.${b64(claims())}.sig`],
  ])("malformed: %s", async (_what, token) => {
    expect(await verifyProof(token, jwtProfile(ISSUER), keyFor, NOW)).toMatchObject({ valid: false, reason: "malformed" });
  });

  it("malformed: an oversized token is refused before any parsing", async () => {
    const token = `${b64({ alg: "RS256", kid: key.kid })}.${"A".repeat(9000)}.sig`;
    expect(await verifyProof(token, jwtProfile(ISSUER), keyFor, NOW)).toMatchObject({ valid: false, reason: "malformed" });
  });

  it("refuses a correctly signed token of another issuer or without the proof claims", async () => {
    const otherIssuer = await signProof(key, claims({ iss: "https://evil.example" }));
    expect(await verifyProof(otherIssuer, jwtProfile(ISSUER), keyFor, NOW)).toMatchObject({ valid: false });
    const bare = await new SignJWT({})
      .setProtectedHeader({ alg: "RS256", typ: "JWT", kid: key.kid })
      .setIssuer(ISSUER)
      .setSubject("x")
      .setIssuedAt(iat)
      .setExpirationTime(iat + 60)
      .sign(key.privateKey);
    expect(await verifyProof(bare, jwtProfile(ISSUER), keyFor, NOW)).toMatchObject({ valid: false, reason: "malformed" });
  });

  it("every refusal carries a message", async () => {
    const v = await verifyProof("x", jwtProfile(ISSUER), keyFor, NOW);
    expect(v.valid).toBe(false);
    if (!v.valid) expect(v.message.length).toBeGreaterThan(0);
  });
});

describe("verifyProof with VerifiedTokens (a token checked before is not verified again)", () => {
  const counting = () => {
    const calls: string[] = [];
    return { calls, keyFor: (kid: string) => (calls.push(kid), keyFor(kid)) };
  };

  it("answers a token it verified before from memory, the same as the first time", async () => {
    const verified = new VerifiedTokens();
    const { calls, keyFor: k } = counting();
    const token = await signProof(key, claims());
    const first = await verifyProof(token, jwtProfile(ISSUER), k, NOW, verified);
    const again = await verifyProof(token, jwtProfile(ISSUER), k, NOW, verified);
    expect(again).toEqual(first);
    expect(again).toEqual({ valid: true, claims: claims(), keyEnv: "live" });
    expect(calls).toHaveLength(1);
    expect(verified.hits).toBe(1);
  });

  it("checks the expiry again on every use, exactly as a full verification does", async () => {
    const verified = new VerifiedTokens();
    const token = await signProof(key, claims({ exp: iat + 60 }));
    expect(await verifyProof(token, jwtProfile(ISSUER), keyFor, NOW, verified)).toMatchObject({ valid: true });
    for (const ms of [59_000, 59_999, 60_000, 61_000]) {
      const at = new Date(NOW.getTime() + ms);
      expect(await verifyProof(token, jwtProfile(ISSUER), keyFor, at, verified)).toEqual(await verifyProof(token, jwtProfile(ISSUER), keyFor, at));
    }
    expect(await verifyProof(token, jwtProfile(ISSUER), keyFor, new Date(NOW.getTime() + 60_000), verified)).toMatchObject({
      valid: false,
      reason: "expired",
    });
  });

  it("never remembers a refused token: a forged one is refused every time, and a forgery of a remembered one too", async () => {
    const verified = new VerifiedTokens();
    const good = await signProof(key, claims());
    const [h, , s] = good.split(".");
    const forged = `${h}.${b64({ ...claims(), tenant_id: "ten_attacker" })}.${s}`;
    expect(await verifyProof(good, jwtProfile(ISSUER), keyFor, NOW, verified)).toMatchObject({ valid: true });
    for (let i = 0; i < 2; i++)
      expect(await verifyProof(forged, jwtProfile(ISSUER), keyFor, NOW, verified)).toMatchObject({ valid: false, reason: "invalid_signature" });
    const otherIssuer = await signProof(key, claims({ iss: "https://evil.example" }));
    for (let i = 0; i < 2; i++) expect(await verifyProof(otherIssuer, jwtProfile(ISSUER), keyFor, NOW, verified)).toMatchObject({ valid: false });
    expect(verified.size).toBe(1);
  });

  it("is bounded: past max tokens the least recently used is verified again", async () => {
    const verified = new VerifiedTokens(2);
    const { calls, keyFor: k } = counting();
    const [a, b, c] = await Promise.all([1, 2, 3].map((n) => signProof(key, claims({ sub: `ver_${n}`, jti: `ver_${n}` }))));
    await verifyProof(a, jwtProfile(ISSUER), k, NOW, verified);
    await verifyProof(b, jwtProfile(ISSUER), k, NOW, verified);
    await verifyProof(a, jwtProfile(ISSUER), k, NOW, verified); // a is the most recent now
    await verifyProof(c, jwtProfile(ISSUER), k, NOW, verified); // b goes
    expect(verified.size).toBe(2);
    expect(calls).toHaveLength(3);
    await verifyProof(a, jwtProfile(ISSUER), k, NOW, verified);
    expect(calls).toHaveLength(3);
    await verifyProof(b, jwtProfile(ISSUER), k, NOW, verified);
    expect(calls).toHaveLength(4);
  });
});

describe("signDocument", () => {
  it("is a compact RS256 JWS with the kid whose payload is the JSON document", async () => {
    const doc = { revoked: [{ proof_id: "ver_1", revoked_at: NOW.toISOString(), reason: "fraud" }], generated_at: NOW.toISOString() };
    const jws = await signDocument(key, doc);
    const { payload, protectedHeader } = await compactVerify(jws, await importJWK(key.jwk, "RS256"));
    expect(protectedHeader).toEqual({ alg: "RS256", kid: key.kid });
    expect(JSON.parse(new TextDecoder().decode(payload))).toEqual(doc);
    await expect(compactVerify(jws, stranger.publicKey)).rejects.toThrow();
  });
});
