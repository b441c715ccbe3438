// A create and a completion answer the row they wrote without reading it back (issue 33): the
// answer must be the row a read of the database then gives (sealed columns opened), for every
// field a verification has, and a completion must answer the attempts and resends the database
// holds, also when they moved after the verification was read.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig, type Scope } from "@icv/platform";
import { startTestProofService, type TestProofService } from "../../proof/test/support/proof-service.ts";
import type { VerificationRow } from "../src/store/rows.ts";
import { VerificationStore } from "../src/store/verifications.ts";
import { createVerification } from "../src/verifications/create.ts";
import type { UseCaseDeps } from "../src/verifications/deps.ts";
import { testVerify } from "../src/verifications/submit.ts";
import { openVerificationDatabase, testUseCaseDeps } from "./support/use-cases.ts";

const scope: Scope = { tenantId: "ten_written", env: "test" };

let proof: TestProofService;
let database: Awaited<ReturnType<typeof openVerificationDatabase>>;
let store: VerificationStore;
let deps: UseCaseDeps;

beforeAll(async () => {
  proof = await startTestProofService();
  database = await openVerificationDatabase(2);
  store = new VerificationStore(database.db);
  deps = testUseCaseDeps({ store, proofs: proof.client, config: parseConfig({ ALLOW_PRIVATE_TARGETS: "true" }) });
});
afterAll(async () => {
  await database?.close();
  await proof?.close();
});

/** The row as the database holds it now, every field of a verification (the table's own bookkeeping columns aside). */
async function stored(answer: VerificationRow): Promise<Record<string, unknown>> {
  const row = (await store.get(scope, answer.id)) as unknown as Record<string, unknown>;
  return Object.fromEntries(Object.keys(answer).map((k) => [k, row[k]]));
}

describe(`rows answered as written (${process.env.DATABASE_URL ? "Postgres" : "PGlite"})`, () => {
  it("a create answers the stored row: sealed identifier and metadata, options, defaults", async () => {
    const inputs = [
      { type: "phone", channel: "telegram", identifier: "+370 691 99199" },
      {
        type: "phone",
        channel: "whatsapp",
        identifier: "+37069199198",
        externalUserId: "user-1",
        clientMetadata: { b: 1, a: { nested: ["x", 2] }, ü: "ö" },
        callbackUrl: "https://hooks.example.com/icv",
        proofExpiresIn: 3600,
        proofFormat: "sd-jwt-vc",
      },
      { type: "email", channel: "email", identifier: "Someone@Example.COM", externalUserId: "user-2" },
    ];
    for (const input of inputs) {
      const { row } = await createVerification(deps, scope, input as Parameters<typeof createVerification>[2]);
      expect(row.status).toBe("pending");
      expect(row, input.identifier).toEqual(await stored(row));
      // every field a read answers is in the answer
      const read = (await store.get(scope, row.id)) as unknown as Record<string, unknown>;
      for (const k of Object.keys(row)) expect(read, k).toHaveProperty(k);
    }
  });

  it("a completion answers the stored row, with attempts counted after the verification was read", async () => {
    const { row } = await createVerification(deps, scope, { type: "phone", channel: "telegram", identifier: "+37069199197", externalUserId: "user-3" });
    const done = await testVerify(deps, scope, row.id);
    expect(done.status).toBe("verified");
    expect(done.proof_token).toMatch(/^ey/);
    expect(done).toEqual(await stored(done));

    const { row: other } = await createVerification(deps, scope, { type: "phone", channel: "telegram", identifier: "+37069199196" });
    const read = (await store.get(scope, other.id))!;
    // a wrong answer lands between the read and the completion
    await store.recordFailedAttempt(scope, other.id, new Date());
    const verified = await store.markVerified(
      read,
      { token: "eyJ.test.token", expiresAt: new Date(Date.now() + 3_600_000), method: "test", identifierSalt: "ab" },
      new Date(),
    );
    expect(read.attempts).toBe(0);
    expect(verified?.attempts).toBe(1);
    expect(verified).toEqual(await stored(verified!));
    // no longer pending: nothing answered
    expect(await store.markVerified(read, { token: "eyJ.x.y", expiresAt: new Date(), method: "test", identifierSalt: "" }, new Date())).toBeUndefined();
  });
});
