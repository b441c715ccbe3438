// A create and a completion answer the row they wrote without reading it back (issue 33): the
// answer must be the row a read of the database then gives (sealed columns opened), for every
// field a verification has, and a completion must answer the attempts and resends the database
// holds, also when they moved after the verification was read. A test-verify of a verification
// this process just created does not read it either: it must still answer every state the row
// reached behind the process's back.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { parseConfig, type Scope } from "@icv/platform";
import type { VerificationRow } from "../src/store/rows.ts";
import { isCreation } from "../src/store/events.ts";
import type { VerificationStore } from "../src/store/verifications.ts";
import { createVerification } from "../src/verifications/create.ts";
import type { UseCaseDeps } from "../src/verifications/deps.ts";
import { testVerify } from "../src/verifications/submit.ts";
import { storeRig, testUseCaseDeps } from "./support/use-cases.ts";

const scope: Scope = { tenantId: "ten_written", env: "test" };

let rig: Awaited<ReturnType<typeof storeRig>>;
let database: typeof rig.database;
let proof: typeof rig.proof;
let store: VerificationStore;
let deps: UseCaseDeps;

beforeAll(async () => {
  rig = await storeRig(2);
  ({ database, proof, store, deps } = rig);
});
afterAll(async () => {
  await rig?.close();
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

  it("a test-verify right after the create reads no verification row, and answers the stored row", async () => {
    const { row } = await createVerification(deps, scope, { type: "phone", channel: "telegram", identifier: "+37069199195", externalUserId: "user-4" });
    const reads = vi.spyOn(database.db, "query");
    try {
      const done = await testVerify(deps, scope, row.id);
      expect(done.status).toBe("verified");
      const sql = reads.mock.calls.map(([text]) => String(text));
      expect(sql.filter((t) => /^\s*SELECT\b.*\bFROM verification\.verifications\b/s.test(t))).toEqual([]);
      expect(sql.some((t) => t.includes("SET status = 'verified'"))).toBe(true);
    } finally {
      reads.mockRestore();
    }
    const done = (await store.get(scope, row.id))!;
    expect(done.status).toBe("verified");
    // a second test-verify (a retry after a lost answer) reads the row and answers the same proof
    expect((await testVerify(deps, scope, row.id)).proof_token).toBe(done.proof_token);
  });

  it("a verification that left pending behind the process's back is not verified, and no proof of it stays valid", async () => {
    for (const status of ["failed", "expired", "verified"] as const) {
      const { row } = await createVerification(deps, scope, { type: "phone", channel: "telegram", identifier: "+37069199194" });
      // another replica moved it (its event has not reached this process yet)
      await database.db.query("UPDATE verification.verifications SET status = $2 WHERE id = $1", [row.id, status]);
      if (status === "verified") {
        // verified elsewhere without a proof here: the answer is the stored row, as a read gives it
        expect((await testVerify(deps, scope, row.id)).status).toBe("verified");
        continue;
      }
      await expect(testVerify(deps, scope, row.id), status).rejects.toMatchObject({ code: status === "expired" ? "challenge_expired" : "invalid_state" });
      expect((await store.get(scope, row.id))?.status).toBe(status);
      const proofStatus = await proof.client.getProofStatus({ scope: { tenantId: scope.tenantId, environment: Environment.TEST }, proofId: row.id }).then(
        (r) => r.status?.status,
        () => "none",
      );
      expect(["revoked", "none"], `${status}: proof ${proofStatus}`).toContain(proofStatus);
    }
  });

  it("once the change's event arrives (or the change was made here), test-verify reads the row and issues no proof", async () => {
    const statusOf = (id: string) =>
      proof.client.getProofStatus({ scope: { tenantId: scope.tenantId, environment: Environment.TEST }, proofId: id }).then(
        (r) => r.status?.status,
        () => "none",
      );
    const { row } = await createVerification(deps, scope, { type: "phone", channel: "telegram", identifier: "+37069199191" });
    await database.db.query("UPDATE verification.verifications SET status = 'failed' WHERE id = $1", [row.id]);
    store.settled.drop(row.id); // what the verification events' follower does with the status_changed event
    await expect(testVerify(deps, scope, row.id)).rejects.toMatchObject({ code: "invalid_state" });
    expect(await statusOf(row.id)).toBe("none");

    const { row: failed } = await createVerification(deps, scope, { type: "phone", channel: "telegram", identifier: "+37069199190" });
    for (let i = 0; i < failed.max_attempts; i++) await store.recordFailedAttempt(scope, failed.id, new Date());
    await expect(testVerify(deps, scope, failed.id)).rejects.toMatchObject({ code: "invalid_state" });
    expect(await statusOf(failed.id)).toBe("none");
  });

  it("of a verification's events, only its creation's leaves the created row to its test-verify", async () => {
    const { row } = await createVerification(deps, scope, { type: "phone", channel: "telegram", identifier: "+37069199189" });
    const events = async () =>
      (
        await database.db.query<{ event_type: string; payload: Record<string, unknown> }>(
          "SELECT event_type, payload FROM verification.outbox WHERE aggregate_id = $1 ORDER BY created_at, id",
          [row.id],
        )
      ).rows.map((r) => ({ eventType: r.event_type, payload: r.payload }));
    const [created] = await events();
    expect(isCreation(created)).toBe(true);
    await testVerify(deps, scope, row.id);
    const after = (await events()).slice(1);
    expect(after.map((e) => e.eventType)).toEqual(["verification.status_changed", "verification.completed"]);
    for (const e of after) expect(isCreation(e), e.eventType).toBe(false);
  });

  it("a just-created verification is never taken for another tenant or environment, nor after its challenge ran out", async () => {
    const { row } = await createVerification(deps, scope, { type: "phone", channel: "telegram", identifier: "+37069199193" });
    await expect(testVerify(deps, { tenantId: "ten_other", env: "test" }, row.id)).rejects.toMatchObject({ code: "not_found" });
    await expect(testVerify(deps, { ...scope, env: "live" }, row.id)).rejects.toMatchObject({ code: "test_mode_required" });
    expect((await store.get(scope, row.id))?.status).toBe("pending");

    // its challenge has run out by the clock of the test-verify: expired, and no proof issued
    const { row: late } = await createVerification(deps, scope, { type: "phone", channel: "telegram", identifier: "+37069199192" });
    const later = testUseCaseDeps({
      store,
      proofs: proof.client,
      config: parseConfig({ ALLOW_PRIVATE_TARGETS: "true" }),
      clock: { now: () => new Date(late.challenge_expires_at.getTime() + 1000) },
    });
    await expect(testVerify(later, scope, late.id)).rejects.toMatchObject({ code: "challenge_expired" });
    expect((await store.get(scope, late.id))?.status).toBe("expired");
    await expect(proof.client.getProofStatus({ scope: { tenantId: scope.tenantId, environment: Environment.TEST }, proofId: late.id })).rejects.toThrow();
  });
});
