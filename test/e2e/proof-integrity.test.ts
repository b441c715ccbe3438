// Proofs that prove, played by an attacker: a test proof (made with a pk_test_ key, no control
// shown) must never pass for a live one, online or offline; every proof says how control was
// shown; and a crash inside revoke never leaves a revoked proof under a "verified" verification.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compactVerify, createLocalJWKSet, createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from "jose";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import { createLogger, parseConfig, rpcClient, serviceIdentity } from "@icv/platform";
import { api, startStack, type Stack, type TenantKeys } from "../support/stack.ts";
import { startSmtp } from "../support/smtp.ts";
import { waitFor } from "../support/expect-error.ts";

/** A proof-service client calling as the verification service (the only caller its allow-list admits for revoke). */
async function asVerification() {
  const identity = await serviceIdentity(parseConfig(stack.env), "verification", createLogger({ level: "silent" }));
  return rpcClient(ProofService, stack.services.proof.url, identity);
}

let smtp: Awaited<ReturnType<typeof startSmtp>>;
let stack: Stack;
let t: TenantKeys;
let other: TenantKeys;

beforeAll(async () => {
  smtp = await startSmtp();
  stack = await startStack({ SMTP_URL: smtp.url, SMTP_FROM: "ICV <codes@icv.test>" });
  [t, other] = await Promise.all([stack.tenant("Integrity"), stack.tenant("Relying party")]);
});
afterAll(async () => {
  await stack?.close();
  await smtp?.close();
});

const pub = () => api(stack.url);
let n = 0;

/** A test proof: create + test-verify with the test key (nothing about the asset was shown). */
async function testProof(key = t.testKey): Promise<{ id: string; token: string }> {
  const c = api(stack.url, key);
  const v = await c.post("/api/v1/verifications", {
    type: "phone",
    channel: "telegram",
    identifier: `+3706910${String(n++).padStart(4, "0")}`,
  });
  expect(v.status).toBe(201);
  const done = await c.post(`/api/v1/verifications/${v.body.id}/test-verify`);
  expect(done.status).toBe(200);
  return { id: v.body.id, token: done.body.proof_token };
}

/** A live proof: a live email verification whose code came by mail (a real SMTP server on loopback). */
async function liveProof(): Promise<{ id: string; token: string }> {
  const c = api(stack.url, t.liveKey);
  const to = `live${n++}@example.com`;
  const v = await c.post("/api/v1/verifications", { type: "email", channel: "email", identifier: to });
  expect(v.status).toBe(201);
  const code = /verification code is (?:<\/p><p[^>]*>)?\s*([A-Z0-9]{6})/.exec((await smtp.waitFor(to)).raw)?.[1];
  const ok = await c.post(`/api/v1/verifications/${v.body.id}/submit`, { challenge_code: code });
  expect(ok.status).toBe(200);
  return { id: v.body.id, token: ok.body.proof.token };
}

const kidsOf = async (p: string) => ((await pub().get(p)).body.keys as { kid: string }[]).map((k) => k.kid);

describe("the attacker's test proof", () => {
  it("is test_proof for a live key (this tenant's or another's), and valid with test_mode only for a test key", async () => {
    const p = await testProof();
    for (const key of [t.liveKey, other.liveKey]) {
      const r = await api(stack.url, key).post("/api/v1/proofs/validate", { proof_token: p.token });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ valid: false, reason: "test_proof", message: expect.any(String) });
    }
    // with the identifier too: still test_proof, never identifier facts
    const withId = await api(stack.url, other.liveKey).post("/api/v1/proofs/validate", {
      proof_token: p.token,
      identifier: "+37069100000",
    });
    expect(withId.body).toMatchObject({ valid: false, reason: "test_proof" });
    for (const key of [t.testKey, other.testKey]) {
      const r = await api(stack.url, key).post("/api/v1/proofs/validate", { proof_token: p.token });
      expect(r.body).toMatchObject({ valid: true, verification: { id: p.id, test_mode: true, method: "test" } });
    }
  });

  it("has a kid that is absent from /.well-known/jwks.json and present in /.well-known/jwks-test.json (same cache headers)", async () => {
    const p = await testProof();
    const kid = decodeProtectedHeader(p.token).kid!;
    const live = await pub().get("/.well-known/jwks.json");
    const test = await pub().get("/.well-known/jwks-test.json");
    expect(test.status).toBe(200);
    expect(test.headers.get("cache-control")).toBe(live.headers.get("cache-control"));
    expect(test.headers.get("cache-control")).toBe("public, max-age=86400");
    const liveKids = (live.body.keys as { kid: string }[]).map((k) => k.kid);
    const testKids = (test.body.keys as { kid: string }[]).map((k) => k.kid);
    expect(liveKids).not.toContain(kid);
    expect(testKids).toContain(kid);
    expect(liveKids.filter((k) => testKids.includes(k))).toEqual([]);
    expect(decodeJwt(p.token)).toMatchObject({ env: "test", method: "test" });
  });

  it("fails jose's offline check against the live JWKS (remote and local) and passes it against jwks-test", async () => {
    const p = await testProof();
    const remoteLive = createRemoteJWKSet(new URL(`${stack.url}/.well-known/jwks.json`));
    await expect(jwtVerify(p.token, remoteLive, { algorithms: ["RS256"] })).rejects.toThrow();
    const localLive = createLocalJWKSet((await pub().get("/.well-known/jwks.json")).body);
    await expect(jwtVerify(p.token, localLive, { algorithms: ["RS256"] })).rejects.toThrow();

    const remoteTest = createRemoteJWKSet(new URL(`${stack.url}/.well-known/jwks-test.json`));
    const { payload } = await jwtVerify(p.token, remoteTest, { algorithms: ["RS256"] });
    expect(payload).toMatchObject({ sub: p.id, env: "test" });
    await expect(
      jwtVerify(p.token, createLocalJWKSet((await pub().get("/.well-known/jwks-test.json")).body), { algorithms: ["RS256"] }),
    ).resolves.toBeDefined();
  });

  it("cannot be turned live by editing its env claim (the signature breaks), nor by moving its kid to a live key", async () => {
    const p = await testProof();
    const [h, body, sig] = p.token.split(".");
    const claims = JSON.parse(Buffer.from(body, "base64url").toString());
    const asLive = [h, Buffer.from(JSON.stringify({ ...claims, env: "live" })).toString("base64url"), sig].join(".");
    const live = api(stack.url, other.liveKey);
    expect((await live.post("/api/v1/proofs/validate", { proof_token: asLive })).body).toMatchObject({
      valid: false,
      reason: "invalid_signature",
    });
    const liveKid = (await kidsOf("/.well-known/jwks.json"))[0];
    const header = JSON.parse(Buffer.from(h, "base64url").toString());
    const movedKid = [Buffer.from(JSON.stringify({ ...header, kid: liveKid })).toString("base64url"), body, sig].join(".");
    expect((await live.post("/api/v1/proofs/validate", { proof_token: movedKid })).body).toMatchObject({
      valid: false,
      reason: "invalid_signature",
    });
  });
});

describe("a live proof", () => {
  it("is signed by a live key, says method otp, and is valid for a live key and for a test key (proofs are portable)", async () => {
    const p = await liveProof();
    expect(await kidsOf("/.well-known/jwks.json")).toContain(decodeProtectedHeader(p.token).kid);
    expect(await kidsOf("/.well-known/jwks-test.json")).not.toContain(decodeProtectedHeader(p.token).kid);
    expect(decodeJwt(p.token)).toMatchObject({ env: "live", method: "otp" });
    const { payload } = await jwtVerify(p.token, createRemoteJWKSet(new URL(`${stack.url}/.well-known/jwks.json`)), {
      algorithms: ["RS256"],
    });
    expect(payload.sub).toBe(p.id);
    for (const key of [other.liveKey, other.testKey]) {
      const r = await api(stack.url, key).post("/api/v1/proofs/validate", { proof_token: p.token });
      expect(r.body).toMatchObject({ valid: true, verification: { id: p.id, test_mode: false, method: "otp" } });
    }
    expect((await api(stack.url, t.liveKey).get(`/api/v1/verifications/${p.id}`)).body).toMatchObject({
      status: "verified",
      method: "otp",
    });
  });
});

describe("revocation lists per environment", () => {
  it("lists live proofs at /proofs/revoked (signed by a live key) and test proofs at ?env=test (signed by a test key)", async () => {
    const [live, test] = await Promise.all([liveProof(), testProof()]);
    expect((await api(stack.url, t.liveKey).post(`/api/v1/proofs/${live.id}/revoke`, { reason: "fraud" })).status).toBe(200);
    expect((await api(stack.url, t.testKey).post(`/api/v1/proofs/${test.id}/revoke`, { reason: "other" })).status).toBe(200);

    const liveList = await pub().get("/api/v1/proofs/revoked");
    const testList = await pub().get("/api/v1/proofs/revoked?env=test");
    expect(testList.status).toBe(200);
    expect(testList.headers.get("cache-control")).toBe("public, max-age=300");
    expect(testList.headers.get("etag")).not.toBe(liveList.headers.get("etag"));
    const ids = (b: { revoked: { proof_id: string }[] }) => b.revoked.map((r) => r.proof_id);
    expect(ids(liveList.body)).toContain(live.id);
    expect(ids(liveList.body)).not.toContain(test.id);
    expect(ids(testList.body)).toContain(test.id);
    expect(ids(testList.body)).not.toContain(live.id);

    const liveSet = createLocalJWKSet((await pub().get("/.well-known/jwks.json")).body);
    const testSet = createLocalJWKSet((await pub().get("/.well-known/jwks-test.json")).body);
    await expect(compactVerify(liveList.body.signature, liveSet)).resolves.toBeDefined();
    await expect(compactVerify(liveList.body.signature, testSet)).rejects.toThrow();
    const { protectedHeader } = await compactVerify(testList.body.signature, testSet);
    expect(await kidsOf("/.well-known/jwks-test.json")).toContain(protectedHeader.kid);
    await expect(compactVerify(testList.body.signature, liveSet)).rejects.toThrow();

    expect((await pub().get("/api/v1/proofs/revoked?env=staging")).status).toBe(400);
  });
});

describe("key rotation per set", () => {
  it("rotates the test set alone (live untouched), and the live set alone", async () => {
    const liveBefore = await kidsOf("/.well-known/jwks.json");
    const before = await testProof();
    const r = await stack.admin.rotateSigningKey({ environment: Environment.TEST }, { headers: stack.adminHeaders });
    expect(r.retiredKid).toBe(decodeProtectedHeader(before.token).kid);
    expect(r.environment).toBe(Environment.TEST);
    const after = await testProof();
    expect(decodeProtectedHeader(after.token).kid).toBe(r.kid);
    expect(await kidsOf("/.well-known/jwks-test.json")).toEqual(expect.arrayContaining([r.kid, r.retiredKid]));
    expect(await kidsOf("/.well-known/jwks.json")).toEqual(liveBefore);
    // the test proof signed before the rotation still validates for a test key
    expect((await api(stack.url, t.testKey).post("/api/v1/proofs/validate", { proof_token: before.token })).body).toMatchObject({
      valid: true,
    });

    const l = await stack.admin.rotateSigningKey({}, { headers: stack.adminHeaders }); // unspecified: live
    expect(l.environment).toBe(Environment.LIVE);
    expect(liveBefore).toContain(l.retiredKid);
    expect(decodeProtectedHeader((await liveProof()).token).kid).toBe(l.kid);
    expect(await kidsOf("/.well-known/jwks-test.json")).not.toContain(l.kid);
  });
});

/** Collects an SSE stream's text until `until` matches it (or 10 s pass). */
async function sseUntil(path: string, key: string, until: RegExp, started: () => void): Promise<string> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), 10_000);
  let text = "";
  try {
    const res = await fetch(stack.url + path, {
      headers: { authorization: `Bearer ${key}`, accept: "text/event-stream" },
      signal: ac.signal,
    });
    const reader = res.body!.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
      if (/event: connected/.test(text)) started();
      if (until.test(text)) break;
    }
  } catch {
    // aborted after 10 s: answer what came
  } finally {
    clearTimeout(timer);
    ac.abort();
  }
  return text;
}

describe("a crash inside revoke", () => {
  // a tenant of its own: polling must not spend the other tests' rate limit
  let k: TenantKeys;
  beforeAll(async () => {
    k = await stack.tenant("Crash in revoke");
  });
  /** Polls a GET every 250 ms until `ok` holds for its body (10 s). */
  const until = (c: ReturnType<typeof api>, path: string, ok: (b: any) => boolean) =>
    waitFor(
      async () => {
        const g = await c.get(path);
        return g.status === 200 && ok(g.body) ? g.body : undefined;
      },
      10_000,
      250,
    );

  it("converges: the proof service revoked the proof, the verification service died before marking it; back up, the verification, its request and its stream follow", async () => {
    const c = api(stack.url, k.testKey);
    /** A request of one phone asset, test-verified: the request and its verification id. */
    const verifiedRequest = async (phone: string) => {
      const req = await c.post("/api/v1/verification-requests", { assets: [{ type: "phone", identifier: phone, channel: "telegram" }] });
      expect(req.status, req.text).toBe(201);
      const vid = req.body.assets[0].verification_id as string;
      expect((await c.post(`/api/v1/verifications/${vid}/test-verify`)).status).toBe(200);
      expect(await until(c, `/api/v1/verification-requests/${req.body.id}`, (b) => b.assets[0].status === "verified")).toBeTruthy();
      return { requestId: req.body.id as string, id: vid };
    };
    const shape = (b: any) => ({ status: b.status, assets: b.assets.map((a: any) => a.status) });
    // the control: a request whose verification is revoked the ordinary way
    const control = await verifiedRequest("+37069109998");
    expect((await c.post(`/api/v1/proofs/${control.id}/revoke`, { reason: "fraud" })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1_000)); // let the request consumer apply it
    const expected = shape((await c.get(`/api/v1/verification-requests/${control.requestId}`)).body);

    const { requestId, id } = await verifiedRequest("+37069109999");
    let connected!: () => void;
    const streaming = new Promise<void>((r) => (connected = r));
    const stream = sseUntil(`/api/v1/verifications/${id}/events`, k.testKey, /"status":"revoked"/, connected);
    await streaming;

    // revoke's first step (the proof service, the owner of the revoked state) happened; the
    // verification service is killed before its own step and comes back later
    let revokedAt = "";
    await stack.restart("verification", async () => {
      const proofs = await asVerification();
      const r = await proofs.revokeProof({ scope: { tenantId: k.tenantId, environment: Environment.TEST }, proofId: id, reason: "fraud" });
      revokedAt = new Date(Number(r.revokedAt!.seconds) * 1000 + Math.floor(r.revokedAt!.nanos / 1e6)).toISOString();
    });

    const v = await until(c, `/api/v1/verifications/${id}`, (b) => b.status === "revoked");
    expect(v).toMatchObject({ id, status: "revoked", revoked_at: revokedAt, revoked_reason: "fraud", method: "test" });
    // the request ends as after an ordinary revoke (a completed request keeps its outcome), and the stream told its listener
    const request = await until(c, `/api/v1/verification-requests/${requestId}`, (b) => JSON.stringify(shape(b)) === JSON.stringify(expected));
    expect(request && shape(request)).toEqual(expected);
    const text = await stream;
    expect(text).toMatch(/"status":"revoked"/);
    expect(text).toContain(`"revoked_at":"${revokedAt}"`);

    // the revoke endpoint agrees (idempotent: the original revoked_at), validation says revoked
    const again = await c.post(`/api/v1/proofs/${id}/revoke`, { reason: "other" });
    expect(again.body).toMatchObject({ success: true, verification_id: id, status: "revoked", revoked_at: revokedAt });
    expect((await c.post("/api/v1/proofs/validate", { proof_token: v.proof.token })).body).toMatchObject({
      valid: false,
      reason: "revoked",
    });
  });

  it("converges while the verification service runs, too (the proof is revoked at its owner only)", async () => {
    const p = await testProof(k.testKey);
    const proofs = await asVerification();
    await proofs.revokeProof({ scope: { tenantId: k.tenantId, environment: Environment.TEST }, proofId: p.id, reason: "key_compromise" });
    const v = await until(api(stack.url, k.testKey), `/api/v1/verifications/${p.id}`, (b) => b.status === "revoked");
    expect(v).toMatchObject({ status: "revoked", revoked_reason: "key_compromise" });
  });
});
