// Reverse OTP and session verifications at the verification service, on a real database and a
// real proof service: an inbound code settles the live verification holding it (whatever the
// tenant) by its sender, test verifications never answer to provider messages, and a session's
// verification is made once however often (or concurrently) it is asked for.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig, type Database, type Scope } from "@icv/platform";
import { startTestProofService, type TestProofService } from "../../proof/test/support/proof-service.ts";
import { VerificationStore } from "../src/store/verifications.ts";
import type { UseCaseDeps } from "../src/verifications/deps.ts";
import { openVerificationDatabase, testUseCaseDeps } from "./support/use-cases.ts";
import { createVerification } from "../src/verifications/create.ts";
import { completeInbound, recordSessionVerification } from "../src/verifications/inbound.ts";
import { validateProof } from "../src/verifications/proofs.ts";
import { getVerification } from "../src/verifications/read.ts";

let proof: TestProofService;
let closeDb: (() => Promise<void>) | undefined;
let db: Database;
let v: UseCaseDeps;
const liveA: Scope = { tenantId: "ten_a", env: "live" };
const liveB: Scope = { tenantId: "ten_b", env: "live" };
const test: Scope = { tenantId: "ten_a", env: "test" };

beforeAll(async () => {
  proof = await startTestProofService();
  ({ db, close: closeDb } = await openVerificationDatabase(4));
  v = testUseCaseDeps({
    store: new VerificationStore(db),
    proofs: proof.client,
    config: parseConfig({
      WHATSAPP_PHONE_NUMBER: "+15550001234",
      WHATSAPP_PHONE_NUMBER_ID: "1098765432",
      WHATSAPP_ACCESS_TOKEN: "EAAG-test-access-token",
      WHATSAPP_APP_SECRET: "whatsapp-app-secret-1",
      SMS_PHONE_NUMBER: "+15550002000",
      TWILIO_ACCOUNT_SID: "AC0123456789abcdef0123456789abcdef",
      TWILIO_AUTH_TOKEN: "twilio-auth-token-1",
    }),
  });
});
afterAll(async () => {
  await closeDb?.();
  await proof?.close();
});

describe("completeInbound (reverse OTP)", () => {
  it("verifies the live verification holding the code when it comes from its number, in any tenant, once", async () => {
    const a = await createVerification(v, liveB, { type: "phone", channel: "whatsapp", identifier: "+37069100101" });
    expect(await completeInbound(v, "whatsapp", a.code!.toLowerCase(), "37069100101")).toEqual({
      outcome: "verified",
      verificationId: a.row.id,
      attemptsRemaining: undefined,
    });
    const got = await getVerification(v, liveB, a.row.id);
    expect(got.status).toBe("verified");
    expect(got.proof_token).toBeTruthy();
    expect((await completeInbound(v, "whatsapp", a.code!, "+37069100101")).outcome).toBe("already_verified");
    // the same code from someone else now changes nothing
    expect((await completeInbound(v, "whatsapp", a.code!, "+37069100999")).outcome).toBe("not_pending");
    expect((await getVerification(v, liveB, a.row.id)).attempts).toBe(0);
  });

  it("a code on another channel, an unknown code or a malformed one is unknown_code", async () => {
    const a = await createVerification(v, liveA, { type: "phone", channel: "sms", identifier: "+37069100102" });
    expect((await completeInbound(v, "whatsapp", a.code!, "+37069100102")).outcome).toBe("unknown_code");
    expect((await completeInbound(v, "sms", a.code === "ZZZZZZ" ? "YYYYYY" : "ZZZZZZ", "+37069100102")).outcome).toBe("unknown_code");
    expect((await completeInbound(v, "sms", "AB", "+37069100102")).outcome).toBe("unknown_code");
    expect((await completeInbound(v, "email", a.code!, "+37069100102")).outcome).toBe("unknown_code");
    expect((await getVerification(v, liveA, a.row.id)).status).toBe("pending");
  });

  it("counts another sender as a failed attempt and the last one fails it", async () => {
    const a = await createVerification(v, liveA, { type: "phone", channel: "sms", identifier: "+37069100103" });
    const first = await completeInbound(v, "sms", a.code!, "+37069100104");
    expect(first).toMatchObject({ outcome: "wrong_sender", attemptsRemaining: 4 });
    for (let i = 0; i < 3; i++) await completeInbound(v, "sms", a.code!, "not a number");
    expect(await completeInbound(v, "sms", a.code!, "+37069100104")).toMatchObject({ outcome: "failed", attemptsRemaining: 0 });
    expect((await getVerification(v, liveA, a.row.id)).status).toBe("failed");
  });

  it("counts a wrong-sender message once by its key, even when it is handled again after a crash", async () => {
    const a = await createVerification(v, liveA, { type: "phone", channel: "whatsapp", identifier: "+37069100107" });
    expect(await completeInbound(v, "whatsapp", a.code!, "+37069100108", "whatsapp:wamid.same")).toMatchObject({
      outcome: "wrong_sender",
      attemptsRemaining: 4,
    });
    expect(await completeInbound(v, "whatsapp", a.code!, "+37069100108", "whatsapp:wamid.same")).toMatchObject({
      outcome: "wrong_sender",
      attemptsRemaining: 4,
    });
    expect((await getVerification(v, liveA, a.row.id)).attempts).toBe(1);
    // another message counts
    expect(await completeInbound(v, "whatsapp", a.code!, "+37069100108", "whatsapp:wamid.other")).toMatchObject({
      outcome: "wrong_sender",
      attemptsRemaining: 3,
    });
  });

  it("never matches a test verification's code (test keys are completed by test-verify)", async () => {
    const a = await createVerification(v, test, { type: "phone", channel: "whatsapp", identifier: "+37069100105" });
    expect((await completeInbound(v, "whatsapp", a.code!, "+37069100105")).outcome).toBe("unknown_code");
    expect((await getVerification(v, test, a.row.id)).status).toBe("pending");
  });
});

describe("recordSessionVerification", () => {
  it("makes one verified verification per session, however often and concurrently it is asked", async () => {
    const input = { channel: "telegram", phoneNumber: "+15555550100", origin: "sess_01JORIGIN000000000000000001", proofExpiresIn: 600 };
    const [x, y] = await Promise.all([recordSessionVerification(v, test, input), recordSessionVerification(v, test, input)]);
    expect(x.id).toBe(y.id);
    expect(x).toMatchObject({ status: "verified", type: "phone", channel: "telegram", identifier: "+15555550100", origin: input.origin });
    expect(x.proof_expires_at!.getTime() - x.verified_at!.getTime()).toBeLessThanOrEqual(600_000);
    const again = await recordSessionVerification(v, test, input);
    expect(again.id).toBe(x.id);
    expect(again.proof_token).toBe(x.proof_token);
    const rows = await db.query("SELECT id FROM verification.verifications WHERE origin = $1", [input.origin]);
    expect(rows.rowCount).toBe(1);
    // it validates with the identifier, although +1555555xxxx is a fictional range
    expect((await validateProof(v, test, x.proof_token!, "+1 555-555-0100")).valid).toBe(true);
    expect(x.method).toBe("test"); // a test session is completed by its test-verify
  });

  it("refuses what a session cannot have: another channel, an impossible number, a proof lifetime out of range", async () => {
    const base = { channel: "whatsapp", phoneNumber: "+37069100106", origin: "sess_01JORIGIN000000000000000002", proofExpiresIn: 600 };
    await expect(recordSessionVerification(v, test, { ...base, channel: "email" })).rejects.toMatchObject({ code: "validation_error" });
    await expect(recordSessionVerification(v, test, { ...base, phoneNumber: "+1" })).rejects.toMatchObject({ code: "invalid_identifier" });
    await expect(recordSessionVerification(v, test, { ...base, proofExpiresIn: 10 })).rejects.toMatchObject({ code: "validation_error" });
  });
});
