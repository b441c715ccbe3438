// Upgrading a proof service whose one key signed test and live proofs alike (before the key sets
// were split): that key becomes a live key, its live proofs stay valid, and its old test proofs
// (env claim "test") never validate as live; new test proofs come from a new test key.
import { createHash, randomBytes } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { migrate, newId, readMigrations } from "@icv/platform";
import { newSigningKey } from "../src/keys.ts";
import { PROOF_SCHEMA_VERSION, signProof } from "../src/tokens.ts";
import { startTestProofService, TEST_ISSUER, type TestProofService } from "./support/proof-service.ts";

const MIGRATIONS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../migrations");
const kek = randomBytes(32);
const hash = createHash("sha256").update("+37069199199").digest("hex");
const now = Math.floor(Date.now() / 1000);
let svc: TestProofService;
let sharedKid: string;
const old: Record<"test" | "live", { id: string; token: string }> = {} as never;

beforeAll(async () => {
  svc = await startTestProofService(undefined, { PROOF_KEY_ENCRYPTION_KEY: kek.toString("base64") }, async (db) => {
    // the release before the split: its migrations, its one key, a test and a live proof it signed
    await migrate(
      db,
      "proof",
      readMigrations(MIGRATIONS).filter((m) => m.version < "003"),
    );
    const { key, record } = await newSigningKey(2048, kek, "live");
    sharedKid = key.kid;
    await db.query(`INSERT INTO proof.signing_keys (kid, public_jwk, private_key_enc, status) VALUES ($1, $2, $3, 'active')`, [
      record.kid,
      JSON.stringify(record.publicJwk),
      record.privateKeyEnc,
    ]);
    for (const env of ["test", "live"] as const) {
      const id = newId("verification");
      const token = await signProof(key, {
        iss: TEST_ISSUER,
        sub: id,
        jti: id,
        iat: now,
        exp: now + 3600,
        proof_schema_version: PROOF_SCHEMA_VERSION,
        tenant_id: "ten_old",
        env,
        type: "phone",
        channel: "telegram",
        identifier_hash: hash,
        verified_at: new Date().toISOString(),
      });
      await db.query(
        `INSERT INTO proof.proofs (id, tenant_id, environment, kid, type, channel, identifier_hash, token, verified_at, issued_at, expires_at)
         VALUES ($1, 'ten_old', $2, $3, 'phone', 'telegram', $4, $5, now(), now(), to_timestamp($6))`,
        [id, env, key.kid, hash, token, now + 3600],
      );
      old[env] = { id, token };
    }
  });
});
afterAll(() => svc?.close());

const live = { tenantId: "ten_x", environment: Environment.LIVE };
const test = { tenantId: "ten_x", environment: Environment.TEST };

describe("a proof service upgraded from one shared key", () => {
  it("makes the shared key a live key: published in the live set only, and it keeps signing live proofs", async () => {
    expect((await svc.client.getJwks({ environment: Environment.LIVE })).keys.map((k) => k.kid)).toEqual([sharedKid]);
    const testKids = (await svc.client.getJwks({ environment: Environment.TEST })).keys.map((k) => k.kid);
    expect(testKids).toHaveLength(1);
    expect(testKids).not.toContain(sharedKid);
    const fresh = await svc.client.issueProof({
      scope: test,
      proofId: newId("verification"),
      type: "email",
      channel: "email",
      identifier: "+37069199199",
      method: "test",
    });
    expect(decodeProtectedHeader(fresh.token).kid).toBe(testKids[0]);
  });

  it("keeps its old live proofs valid, and answers test_proof for its old test proofs validated live", async () => {
    expect(await svc.client.validateProof({ proofToken: old.live.token, scope: live })).toMatchObject({
      valid: true,
      testMode: false,
      method: "",
    });
    expect(await svc.client.validateProof({ proofToken: old.test.token, scope: live })).toMatchObject({
      valid: false,
      reason: "test_proof",
    });
    expect(await svc.client.validateProof({ proofToken: old.test.token, scope: test })).toMatchObject({ valid: true, testMode: true });
    // offline, an old test proof still verifies against the live set (its key signed live proofs
    // too) until it expires: an offline verifier must check env == "live" (docs/proofs.md)
    const set = createLocalJWKSet({
      keys: (await svc.client.getJwks({ environment: Environment.LIVE })).keys.map((k) => ({ kty: k.kty, n: k.n, e: k.e, kid: k.kid })),
    });
    const { payload } = await jwtVerify(old.test.token, set, { issuer: TEST_ISSUER });
    expect(payload.env).toBe("test");
  });
});
