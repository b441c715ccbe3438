// Completing a verification by the user's own answer: a phone code sent to the phone (outbound,
// with the attempt budget of 5; a shown reverse-OTP code is refused), the source_identifier
// check, an email code that is never shown to the caller, and an Ethereum wallet signature over
// challenge.message.
import { beforeAll, describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";
import { otherCode, sentCode } from "../support/sent-code.ts";
import { expectError } from "../support/expect-error.ts";

const stack = useStack();
const t = useTenant(stack, "Submit");
let c: ReturnType<typeof api>;

beforeAll(() => {
  c = api(stack.url, t.testKey);
});

const wrong = otherCode;

async function createPhone(identifier: string, channel = "sms", delivery?: "outbound") {
  const r = await c.post("/api/v1/verifications", { type: "phone", channel, identifier, delivery });
  expect(r.status, r.text).toBe(201);
  return r.body;
}

describe("phone code", () => {
  it("shows the reverse-OTP code on creation in test mode, and submit refuses it (only the phone's own message completes it)", async () => {
    const v = await createPhone("+1 415 555 2671", "whatsapp");
    expect(v).toMatchObject({
      type: "phone",
      channel: "whatsapp",
      status: "pending",
      identifier: "+14155552671",
      attempts: 0,
      max_attempts: 5,
      delivery: "inbound",
    });
    expect(v.challenge.code).toMatch(/^[A-Z0-9]{6}$/);
    expect(v.challenge.instruction).toContain(v.challenge.code);
    expect(Date.parse(v.challenge.expires_at) - Date.parse(v.created_at)).toBe(10 * 60_000);
    expectError(await c.post(`/api/v1/verifications/${v.id}/submit`, { challenge_code: v.challenge.code }), 409, "invalid_state");
    expect((await c.get(`/api/v1/verifications/${v.id}`)).body).toMatchObject({ status: "pending", attempts: 0 });
  });

  it("counts wrong codes down 4, 3, 2, 1, fails on the 5th, and then refuses even the right code", async () => {
    const v = await createPhone("+37069100010", "sms", "outbound");
    const code = await sentCode(c, v.id);
    const remaining: number[] = [];
    for (let i = 0; i < 4; i++) {
      const e = expectError(await c.post(`/api/v1/verifications/${v.id}/submit`, { challenge_code: wrong(code, i) }), 400, "invalid_code");
      remaining.push(e.attempts_remaining);
    }
    expect(remaining).toEqual([4, 3, 2, 1]);
    const mid = await c.get(`/api/v1/verifications/${v.id}`);
    expect(mid.body).toMatchObject({ status: "pending", attempts: 4, max_attempts: 5 });

    expectError(await c.post(`/api/v1/verifications/${v.id}/submit`, { challenge_code: wrong(code, 4) }), 400, "max_attempts_exceeded");
    const failed = await c.get(`/api/v1/verifications/${v.id}`);
    expect(failed.status).toBe(200);
    expect(failed.body).toMatchObject({ status: "failed", attempts: 5 });
    expect(failed.body.proof).toBeUndefined();

    expectError(await c.post(`/api/v1/verifications/${v.id}/submit`, { challenge_code: code }), 409, "invalid_state");
    expectError(await c.post(`/api/v1/verifications/${v.id}/test-verify`), 409, "invalid_state");
    expect((await c.get(`/api/v1/verifications/${v.id}`)).body.status).toBe("failed");
  });

  it("verifies with the code sent to the phone (outbound) and answers the verification with its proof", async () => {
    const v = await createPhone("+37069100011", "sms", "outbound");
    expect(v.challenge.code).toBeUndefined();
    const ok = await c.post(`/api/v1/verifications/${v.id}/submit`, { challenge_code: await sentCode(c, v.id) });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ id: v.id, status: "verified", identifier: "+37069100011" });
    expect(ok.body.proof.token.split(".")).toHaveLength(3);
    expect(Date.parse(ok.body.proof.expires_at)).toBeGreaterThan(Date.now());
    expect(Date.parse(ok.body.verified_at)).toBeGreaterThanOrEqual(Date.parse(v.created_at));
    expect(ok.body.challenge).toBeUndefined();

    const read = await c.get(`/api/v1/verifications/${v.id}`);
    expect(read.body).toMatchObject({ status: "verified", verified_at: ok.body.verified_at, proof: ok.body.proof });
    const valid = await c.post("/api/v1/proofs/validate", { proof_token: ok.body.proof.token, identifier: "+370 691 00011" });
    expect(valid.body).toMatchObject({ valid: true, verification: { id: v.id, type: "phone", channel: "sms" } });
  });

  it("counts a source_identifier of another number as a wrong attempt, and accepts the right number in any format", async () => {
    const v = await createPhone("+37069100012", "whatsapp", "outbound");
    const code = await sentCode(c, v.id);
    const e = expectError(
      await c.post(`/api/v1/verifications/${v.id}/submit`, { challenge_code: code, source_identifier: "+37069100013" }),
      400,
      "invalid_code",
    );
    expect(e.attempts_remaining).toBe(4);
    expect((await c.get(`/api/v1/verifications/${v.id}`)).body).toMatchObject({ status: "pending", attempts: 1 });
    const ok = await c.post(`/api/v1/verifications/${v.id}/submit`, { challenge_code: code, source_identifier: "+370 691 00012" });
    expect(ok.status).toBe(200);
    expect(ok.body.status).toBe("verified");
  });
});

describe("email code", () => {
  it("is never returned to the caller", async () => {
    const r = await c.post("/api/v1/verifications", { type: "email", channel: "email", identifier: "John.Doe+tag@Example.COM" });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ type: "email", channel: "email", status: "pending", identifier: "john.doe+tag@example.com" });
    expect(r.body.challenge.code).toBeUndefined();
    expect(r.body.challenge.instruction).toBeTruthy();
    expect(r.body.challenge.instruction).not.toMatch(/\b[A-Z0-9]{6}\b/);
    expect(Date.parse(r.body.challenge.expires_at) - Date.parse(r.body.created_at)).toBe(30 * 60_000);
    const read = await c.get(`/api/v1/verifications/${r.body.id}`);
    expect(read.body.challenge.code).toBeUndefined();
    const list = await c.get("/api/v1/verifications?type=email");
    expect(list.body.data.find((x: { id: string }) => x.id === r.body.id).challenge.code).toBeUndefined();
  });
});

describe("ethereum wallet", () => {
  it("verifies a signature of challenge.message by the wallet's key", async () => {
    const wallet = privateKeyToAccount(generatePrivateKey());
    const r = await c.post("/api/v1/verifications", { type: "wallet", channel: "ethereum", identifier: wallet.address.toLowerCase() });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ type: "wallet", channel: "ethereum", status: "pending", identifier: wallet.address });
    expect(r.body.challenge.code).toBeUndefined();
    const message: string = r.body.challenge.message;
    expect(message).toContain(wallet.address);
    expect(message).toMatch(/wants you to sign in with your Ethereum account:/);
    expect(message).toMatch(/^Nonce: \w{8,}$/m);

    const ok = await c.post(`/api/v1/verifications/${r.body.id}/submit`, { signature: await wallet.signMessage({ message }) });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ id: r.body.id, status: "verified" });
    expect(ok.body.proof.token).toBeTruthy();
    const valid = await c.post("/api/v1/proofs/validate", { proof_token: ok.body.proof.token, identifier: wallet.address.toLowerCase() });
    expect(valid.body).toMatchObject({
      valid: true,
      verification: { id: r.body.id, type: "wallet", channel: "ethereum", method: "signature" },
    });
  });

  it("answers invalid_signature with attempts_remaining for a signature by another key, or of another message", async () => {
    const wallet = privateKeyToAccount(generatePrivateKey());
    const intruder = privateKeyToAccount(generatePrivateKey());
    const r = await c.post("/api/v1/verifications", { type: "wallet", channel: "ethereum", identifier: wallet.address });
    const message: string = r.body.challenge.message;

    const e1 = expectError(
      await c.post(`/api/v1/verifications/${r.body.id}/submit`, { signature: await intruder.signMessage({ message }) }),
      400,
      "invalid_signature",
    );
    expect(e1.attempts_remaining).toBe(4);
    const other = await wallet.signMessage({ message: message.replace(/^Nonce: .*$/m, "Nonce: 00000000000000") });
    const e2 = expectError(await c.post(`/api/v1/verifications/${r.body.id}/submit`, { signature: other }), 400, "invalid_signature");
    expect(e2.attempts_remaining).toBe(3);
    expect((await c.get(`/api/v1/verifications/${r.body.id}`)).body).toMatchObject({ status: "pending", attempts: 2 });

    const ok = await c.post(`/api/v1/verifications/${r.body.id}/submit`, { signature: await wallet.signMessage({ message }) });
    expect(ok.status).toBe(200);
    expect(ok.body.status).toBe("verified");
  });
});
