// "A crash between two steps loses nothing", as a tenant sees it: a service restarted on the same
// database still knows every verification, a retried test-verify answers the same proof, and a
// proof service that dies while a proof is being issued does not leave the verification stuck.
import { beforeAll, describe, expect, it } from "vitest";
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import { otherCode, sentCode } from "../support/sent-code.ts";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";
import { expectError } from "../support/expect-error.ts";

const stack = useStack();
const t = useTenant(stack, "Crash");
let c: ReturnType<typeof api>;

beforeAll(() => {
  c = api(stack.url, t.testKey);
});

async function create(identifier: string, delivery?: "outbound") {
  const r = await c.post("/api/v1/verifications", { type: "phone", channel: "sms", identifier, delivery });
  expect(r.status).toBe(201);
  return r.body;
}

async function expectValidOfflineAndOnline(id: string, token: string) {
  const online = await c.post("/api/v1/proofs/validate", { proof_token: token });
  expect(online.body).toMatchObject({ valid: true, verification: { id } });
  const jwks = await api(stack.url).get("/.well-known/jwks-test.json"); // test proofs: the test key set
  const { payload } = await jwtVerify(token, createLocalJWKSet(jwks.body), { algorithms: ["RS256"] });
  expect(payload.sub).toBe(id);
}

describe("a restarted verification service", () => {
  it("still returns a pending verification made before the restart, and test-verify then works", async () => {
    const v = await create("+37069100040");
    await stack.restart("verification");
    const read = await c.get(`/api/v1/verifications/${v.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id: v.id, status: "pending", identifier: "+37069100040", attempts: 0 });
    expect(read.body.challenge.expires_at).toBe(v.challenge.expires_at);
    const done = await c.post(`/api/v1/verifications/${v.id}/test-verify`);
    expect(done.status).toBe(200);
    expect(done.body.status).toBe("verified");
    await expectValidOfflineAndOnline(v.id, done.body.proof_token);
  });

  it("accepts after the restart the code it issued before it, and keeps the attempt count", async () => {
    // a code the service sent (outbound): a reverse-OTP code is never accepted by submit
    const v = await create("+37069100041", "outbound");
    const code = await sentCode(c, v.id);
    expect((await c.post(`/api/v1/verifications/${v.id}/submit`, { challenge_code: otherCode(code) })).body.error.attempts_remaining).toBe(4);
    await stack.restart("verification");
    expect((await c.get(`/api/v1/verifications/${v.id}`)).body.attempts).toBe(1);
    const ok = await c.post(`/api/v1/verifications/${v.id}/submit`, { challenge_code: code });
    expect(ok.status).toBe(200);
    expect(ok.body.status).toBe("verified");
  });
});

describe("a retried test-verify", () => {
  it("answers the same proof token as the first call (a retry after a lost answer)", async () => {
    const v = await create("+37069100042");
    const first = await c.post(`/api/v1/verifications/${v.id}/test-verify`);
    const second = await c.post(`/api/v1/verifications/${v.id}/test-verify`);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.body.proof_token).toBe(first.body.proof_token);
    expect(second.body.verified_at).toBe(first.body.verified_at);
    const read = await c.get(`/api/v1/verifications/${v.id}`);
    expect(read.body.proof.token).toBe(first.body.proof_token);
  });

  it("answers one proof when two calls race", async () => {
    const v = await create("+37069100043");
    const [a, b] = await Promise.all([c.post(`/api/v1/verifications/${v.id}/test-verify`), c.post(`/api/v1/verifications/${v.id}/test-verify`)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(b.body.proof_token).toBe(a.body.proof_token);
    expect((await c.get(`/api/v1/verifications/${v.id}`)).body.proof.token).toBe(a.body.proof_token);
  });
});

describe("a proof service restarted while a proof is being issued", () => {
  it("leaves a verification that can still be completed, with a proof that validates", async () => {
    const old = await create("+37069100044");
    const oldProof = (await c.post(`/api/v1/verifications/${old.id}/test-verify`)).body.proof_token as string;
    const v = await create("+37069100045");

    const inflight = c.post(`/api/v1/verifications/${v.id}/test-verify`);
    await stack.restart("proof");
    const first = await inflight;
    // whatever the first call saw, it is a clean answer: its proof, or 503 service_unavailable (never a hang or a stack)
    if (first.status !== 200) expectError(first, 503, "service_unavailable");

    const retry = await c.post(`/api/v1/verifications/${v.id}/test-verify`);
    expect(retry.status).toBe(200);
    expect(retry.body.status).toBe("verified");
    if (first.status === 200) expect(retry.body.proof_token).toBe(first.body.proof_token);
    const read = await c.get(`/api/v1/verifications/${v.id}`);
    expect(read.body).toMatchObject({ status: "verified", proof: { token: retry.body.proof_token } });
    await expectValidOfflineAndOnline(v.id, retry.body.proof_token);

    // the restart kept the signing key: same kid, and the proof issued before it still validates
    expect(decodeProtectedHeader(retry.body.proof_token).kid).toBe(decodeProtectedHeader(oldProof).kid);
    await expectValidOfflineAndOnline(old.id, oldProof);
  });
});
