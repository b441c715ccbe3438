// Personal data at rest in the verification schema (docs/privacy.md): what a store writes is sealed
// (no identifier, metadata or message text in a column), reads answer it opened, a sealed value
// does not open under another key, on another row or with a key version that is not configured,
// and rows written before sealing are sealed in batches by the background pass.
import path from "node:path";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate, openDatabase, PersonalData, readMigrations, SealedDataError, type Database } from "@icv/platform";
import { freshPostgres, type FreshPostgres } from "../../../test/support/fresh-postgres.ts";
import { VerificationStore } from "../src/store/verifications.ts";
import { checkVerificationKeys, sealOutdated, verificationDatabase } from "../src/store/sealing.ts";

const MIGRATIONS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../migrations");
let pgFresh: FreshPostgres | undefined;
let db: Database;
const key = () => randomBytes(32);
const k1 = key();
const indexKey = key();
const pd = new PersonalData(new Map([[1, k1]]), indexKey);

beforeAll(async () => {
  pgFresh = process.env.DATABASE_URL ? await freshPostgres(process.env.DATABASE_URL) : undefined;
  db = await openDatabase(pgFresh ? { url: pgFresh.url, poolMax: 4 } : { dataDir: "memory://" });
  await migrate(db, "verification", readMigrations(MIGRATIONS));
});
afterAll(async () => {
  await db?.close();
  await pgFresh?.drop();
});

const T0 = new Date("2026-01-02T03:04:05Z");
function newVerification(id: string, identifier: string) {
  return {
    id,
    tenant_id: "ten_pd",
    environment: "test" as const,
    type: "email",
    channel: "email",
    identifier,
    identifier_canonical: identifier.toLowerCase(),
    code_hmac: null,
    challenge_expires_at: new Date(T0.getTime() + 600_000),
    instruction: `Enter the code sent to ${identifier}`,
    deep_link: null,
    challenge_message: null,
    max_attempts: 5,
    client_metadata: { crm_id: `crm-${id}` },
    external_user_id: "user_pd",
    proof_expires_in: 3600,
    created_at: T0,
    code_lookup: null,
    origin: null,
    delivery: null,
  };
}

describe("PersonalData", () => {
  it("opens what it sealed only with the same key, version and row", () => {
    const sealed = pd.seal("alice@example.com", "identifier:ver_1");
    expect(sealed).toMatch(/^pd1\.1\.[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain("alice");
    expect(pd.seal("alice@example.com", "identifier:ver_1")).not.toBe(sealed); // a nonce per value
    expect(pd.open(sealed, "identifier:ver_1")).toBe("alice@example.com");
    // copied onto another row, it does not open
    expect(() => pd.open(sealed, "identifier:ver_2")).toThrow(/key version 1 .*wrong key/);
    const other = new PersonalData(new Map([[1, key()]]), key());
    expect(() => other.open(sealed, "identifier:ver_1")).toThrow(SealedDataError);
    const rotated = new PersonalData(new Map([[2, key()]]), key());
    expect(() => rotated.open(sealed, "identifier:ver_1")).toThrow(/key version 1, which DATA_ENCRYPTION_KEY does not hold/);
    // a value written before sealing is answered as it is
    expect(pd.open("legacy@example.com", "identifier:ver_1")).toBe("legacy@example.com");
  });

  it("blind-indexes per kind under its own key", () => {
    expect(pd.index("identifier:email", "a@example.com")).toBe(pd.index("identifier:email", "a@example.com"));
    expect(pd.index("identifier:email", "a@example.com")).not.toBe(pd.index("identifier:domain", "a@example.com"));
    expect(new PersonalData(new Map([[1, key()]]), key()).index("identifier:email", "a@example.com")).not.toBe(pd.index("identifier:email", "a@example.com"));
  });
});

describe("the sealing database", () => {
  it("refuses a sealed value read without its row id rather than answer ciphertext", async () => {
    const store = new VerificationStore(verificationDatabase(db, pd));
    await store.insert(newVerification("ver_pdkeyless1", "Keyless.Lemur@example.com"));
    const sealing = verificationDatabase(db, pd);
    await expect(sealing.query(`SELECT identifier FROM verification.verifications WHERE id = 'ver_pdkeyless1'`)).rejects.toThrow(/without its row's id/);
    const withId = await sealing.query<{ identifier: string }>(`SELECT id, identifier FROM verification.verifications WHERE id = 'ver_pdkeyless1'`);
    expect(withId.rows[0].identifier).toBe("Keyless.Lemur@example.com");
  });
});

describe("the verification store", () => {
  it("stores no identifier, metadata or instruction in clear and reads them back opened", async () => {
    const store = new VerificationStore(verificationDatabase(db, pd));
    const v = newVerification("ver_pdstore1", "Zebra.Quokka@example.com");
    await store.insert(v);
    const raw = await db.query<Record<string, unknown>>(`SELECT * FROM verification.verifications WHERE id = $1`, [v.id]);
    const text = JSON.stringify(raw.rows[0]);
    expect(text).not.toMatch(/quokka/i);
    expect(text).not.toContain("crm-ver_pdstore1");
    expect(raw.rows[0]).toMatchObject({ key_version: 1, identifier: expect.stringMatching(/^pd1\.1\./) });
    const read = await store.get({ tenantId: "ten_pd", env: "test" }, v.id);
    expect(read).toMatchObject({
      identifier: "Zebra.Quokka@example.com",
      identifier_canonical: "zebra.quokka@example.com",
      instruction: "Enter the code sent to Zebra.Quokka@example.com",
      client_metadata: { crm_id: "crm-ver_pdstore1" },
    });
  });

  it("seals rows written before sealing in batches, and refuses keys that do not open them", async () => {
    await db.query(
      `INSERT INTO verification.verifications (id, tenant_id, environment, type, channel, identifier, identifier_canonical, status, challenge_expires_at,
         instruction, client_metadata, proof_expires_in, created_at, updated_at)
       VALUES ('ver_pdlegacy1', 'ten_pd', 'test', 'email', 'email', 'Legacy.Okapi@example.com', 'legacy.okapi@example.com', 'pending', $1,
         'Enter the code sent to Legacy.Okapi@example.com', '{"note": "okapi-meta"}', 3600, $1, $1)`,
      [T0],
    );
    const sealing = verificationDatabase(db, pd);
    let total = 0;
    for (let n = await sealOutdated(sealing, 1); n > 0; n = await sealOutdated(sealing, 1)) total += n;
    expect(total).toBeGreaterThanOrEqual(1);
    const raw = await db.query<Record<string, unknown>>(`SELECT * FROM verification.verifications WHERE id = 'ver_pdlegacy1'`);
    expect(JSON.stringify(raw.rows[0])).not.toMatch(/okapi/i);
    const read = await new VerificationStore(sealing).get({ tenantId: "ten_pd", env: "test" }, "ver_pdlegacy1");
    expect(read).toMatchObject({ identifier: "Legacy.Okapi@example.com", client_metadata: { note: "okapi-meta" } });

    await expect(checkVerificationKeys(db, pd)).resolves.toBeUndefined();
    // the start check names the version it needs: missing, or present but the wrong key
    await expect(checkVerificationKeys(db, new PersonalData(new Map([[2, key()]]), key()))).rejects.toThrow(/missing key version 1/);
    await expect(checkVerificationKeys(db, new PersonalData(new Map([[1, key()]]), key()))).rejects.toThrow(/key version 1 is not the key/);
    // a rotation (2 seals, 1 still opens) re-seals every row under version 2
    const next = new PersonalData(
      new Map([
        [2, key()],
        [1, k1],
      ]),
      indexKey,
    );
    const rotating = verificationDatabase(db, next);
    while ((await sealOutdated(rotating)) > 0);
    const versions = await db.query<{ key_version: number }>(`SELECT DISTINCT key_version FROM verification.verifications`);
    expect(versions.rows).toEqual([{ key_version: 2 }]);
    expect((await new VerificationStore(rotating).get({ tenantId: "ten_pd", env: "test" }, "ver_pdstore1"))?.identifier).toBe("Zebra.Quokka@example.com");
  });
});
