// Redact, user-wide redaction, export and retention (DECISIONS.md, "Personal data: at rest,
// retention, erasure, export"), driven through the API and the admin CLI as a tenant and an
// operator would: what is erased and what stays, proofs valid unless revoked, no reuse of a
// redacted identifier, idempotent counts, 404 for an unknown user, the verification.redacted
// webhook, stored webhook bodies and the test inbox redacted, and the retention sweeper.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { ProofFormat, ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import { createLogger, ManualClock, parseConfig, rpcClient, serviceIdentity } from "@icv/platform";
import { adminCli } from "../support/admin-cli.ts";
import { expectError } from "../support/expect-error.ts";
import { startReceiver, type Receiver } from "../support/receiver.ts";
import { api, startStack, type Stack, type TenantKeys } from "../support/stack.ts";

const clock = new ManualClock(Date.now());
let rx: Receiver;
let stack: Stack;
let t: TenantKeys;

beforeAll(async () => {
  rx = await startReceiver(200);
  stack = await startStack({ ALLOW_PRIVATE_TARGETS: "true", SWEEP_INTERVAL_MS: "200" }, clock);
  t = await stack.tenant("Redaction");
  await stack.admin.setWebhookEndpoint({ tenantId: t.tenantId, environment: Environment.TEST, url: rx.url }, { headers: stack.adminHeaders });
});
afterAll(async () => {
  await stack?.close();
  await rx?.close();
});

const bodies = () => rx.requests.map((r) => JSON.parse(r.body));
async function waitUntil<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function verified(user: string, identifier: string, metadata: Record<string, unknown> = { crm: "c-1" }) {
  const c = api(stack.url, t.testKey);
  const v = await c.post("/api/v1/verifications", { type: "email", channel: "email", identifier, external_user_id: user, client_metadata: metadata });
  expect(v.status, v.text).toBe(201);
  const done = await c.post(`/api/v1/verifications/${v.body.id}/test-verify`);
  expect(done.status, done.text).toBe(200);
  return done.body;
}

describe("redact one verification", () => {
  it("erases identifier, metadata, test messages and stored webhook bodies; keeps the rest; the proof stays valid; idempotent", async () => {
    const c = api(stack.url, t.testKey);
    const v = await verified("user-r1", "erase.me@example.com", { crm: "secret-crm-1" });
    await waitUntil("the completed webhook", () => bodies().find((b) => b.event === "verification.completed" && b.verification_id === v.id));
    const exported = await c.get("/api/v1/verifications/users/user-r1/export");
    const completed = exported.body.deliveries.find((d: { event_type: string }) => d.event_type === "verification.completed");
    expect(JSON.stringify((await c.get(`/api/v1/webhook-deliveries/${completed.id}`)).body)).toContain("secret-crm-1");

    const r = await c.post(`/api/v1/verifications/${v.id}/redact`, {});
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ redacted: 1, revoked: 0 });
    // a repeat answers the same counts
    expect((await c.post(`/api/v1/verifications/${v.id}/redact`, {})).body).toEqual({ redacted: 1, revoked: 0 });

    const read = await c.get(`/api/v1/verifications/${v.id}`);
    expect(read.body).toMatchObject({
      id: v.id,
      type: "email",
      channel: "email",
      status: "verified",
      identifier: null,
      created_at: v.created_at ?? expect.any(String),
    });
    expect(read.body.redacted_at).toEqual(expect.any(String));
    expect(read.body.client_metadata).toBeUndefined();
    expect(read.body.external_user_id).toBeUndefined();
    // the proof still validates (no token holds an identifier)
    const valid = await c.post("/api/v1/proofs/validate", { proof_token: v.proof_token });
    expect(valid.body.valid, valid.text).toBe(true);
    // the test inbox keeps nothing of it
    expect((await c.get(`/api/v1/test/messages?verification_id=${v.id}`)).body.data).toEqual([]);
    // the webhook: verification.redacted, without personal data
    const redacted = await waitUntil("the redacted webhook", () => bodies().find((b) => b.event === "verification.redacted" && b.verification_id === v.id));
    expect(redacted).toMatchObject({ type: "email", channel: "email", status: "verified", proof_revoked: false, reason: "request" });
    expect(JSON.stringify(redacted)).not.toContain("erase.me");
    // the stored body of the earlier delivery lost its client_metadata
    const stored = await waitUntil("the stored body redacted", async () => {
      const d = await c.get(`/api/v1/webhook-deliveries/${completed.id}`);
      return JSON.stringify(d.body).includes("secret-crm-1") ? undefined : d.body;
    });
    expect(JSON.stringify(stored)).not.toContain("user-r1");
  });

  it("revoke_proofs revokes the proof (user_request), and a pending verification is cancelled first", async () => {
    const c = api(stack.url, t.testKey);
    const v = await verified("user-r2", "revoke.me@example.com");
    const r = await c.post(`/api/v1/verifications/${v.id}/redact`, { revoke_proofs: true });
    expect(r.body).toEqual({ redacted: 1, revoked: 1 });
    expect((await c.post(`/api/v1/verifications/${v.id}/redact`, { revoke_proofs: true })).body).toEqual({ redacted: 1, revoked: 1 });
    const valid = await c.post("/api/v1/proofs/validate", { proof_token: v.proof_token });
    expect(valid.body).toMatchObject({ valid: false, reason: "revoked" });
    expect((await c.get(`/api/v1/verifications/${v.id}`)).body).toMatchObject({ status: "revoked", revoked_reason: "user_request", identifier: null });

    const p = await c.post("/api/v1/verifications", { type: "email", channel: "email", identifier: "pending.one@example.com" });
    expect((await c.post(`/api/v1/verifications/${p.body.id}/redact`, {})).body).toEqual({ redacted: 1, revoked: 0 });
    expect((await c.get(`/api/v1/verifications/${p.body.id}`)).body).toMatchObject({ status: "expired", identifier: null });
    expect((await c.get(`/api/v1/verifications/${p.body.id}`)).body.challenge).toBeUndefined();
  });

  it("refuses bad input: unknown id 404, unknown field 400, another tenant's verification 404", async () => {
    const c = api(stack.url, t.testKey);
    await expectError(await c.post("/api/v1/verifications/ver_01J00000000000000000000000/redact", {}), 404, "not_found");
    const v = await verified("user-r3", "fields@example.com");
    await expectError(await c.post(`/api/v1/verifications/${v.id}/redact`, { revoke: true }), 400, "validation_error");
    const other = await stack.tenant("Other");
    await expectError(await api(stack.url, other.testKey).post(`/api/v1/verifications/${v.id}/redact`, {}), 404, "not_found");
    // the live key does not see test verifications
    await expectError(await api(stack.url, t.liveKey).post(`/api/v1/verifications/${v.id}/redact`, {}), 404, "not_found");
  });
});

/** The proof the proof service stored, as it answers a repeated issuance (a retry of the verification service gets it). */
async function storedProof(id: string, identifier: string) {
  const identity = await serviceIdentity(parseConfig(stack.env), "verification", createLogger({ level: "silent" }));
  return rpcClient(ProofService, stack.services.proof.url, identity).issueProof({
    scope: { tenantId: t.tenantId, environment: Environment.TEST },
    proofId: id,
    type: "email",
    channel: "email",
    identifier,
    expiresInSeconds: 3600,
    method: "test",
    format: ProofFormat.SD_JWT_VC,
  });
}

describe("an SD-JWT VC verification redacted", () => {
  it("the proof service's stored SD-JWT VC (its disclosures name the identifier) is erased; the JWT still validates", async () => {
    const c = api(stack.url, t.testKey);
    const identifier = "vc.erase.me@example.com";
    const made = await c.post("/api/v1/verifications", { type: "email", channel: "email", identifier, proof_format: "sd-jwt-vc" });
    expect(made.status, made.text).toBe(201);
    const v = (await c.post(`/api/v1/verifications/${made.body.id}/test-verify`)).body;
    expect(v.proof_sd_jwt_vc).toEqual(expect.any(String));
    const stored = () => storedProof(v.id, identifier);
    const before = await stored();
    expect(before.sdJwtVc).toBe(v.proof_sd_jwt_vc);
    expect(before.token).toBe(v.proof_token);

    expect((await c.post(`/api/v1/verifications/${v.id}/redact`, {})).body).toEqual({ redacted: 1, revoked: 0 });
    // the proof service applies verification.redacted by its consumer group
    const after = await waitUntil("the stored SD-JWT VC erased", async () => {
      const r = await stored();
      return r.sdJwtVc === undefined ? r : undefined;
    });
    expect(after.token).toBe(v.proof_token);
    const valid = await c.post("/api/v1/proofs/validate", { proof_token: v.proof_token });
    expect(valid.body.valid, valid.text).toBe(true);
    expect((await c.get(`/api/v1/verifications/${v.id}`)).body.proof?.sd_jwt_vc).toBeUndefined();
  });
});

describe("every verification of an external user", () => {
  it("exports everything held, then redacts all of it; a redacted identifier is no longer offered for reuse; unknown users are 404", async () => {
    const c = api(stack.url, t.testKey);
    const a = await verified("user-all", "all.one@example.com", { crm: "x" });
    const b = await verified("user-all", "all.two@example.com");
    const pending = await c.post("/api/v1/verifications", {
      type: "email",
      channel: "email",
      identifier: "all.three@example.com",
      external_user_id: "user-all",
    });

    const ex = await c.get("/api/v1/verifications/users/user-all/export");
    expect(ex.status, ex.text).toBe(200);
    expect(ex.body.external_user_id).toBe("user-all");
    expect(ex.body.verifications.map((v: { id: string }) => v.id)).toEqual([a.id, b.id, pending.body.id]);
    expect(ex.body.verifications[0]).toMatchObject({
      identifier: "all.one@example.com",
      client_metadata: { crm: "x" },
      proof: { expires_at: expect.any(String) },
    });
    await waitUntil("deliveries of the export", async () => {
      const e = await c.get("/api/v1/verifications/users/user-all/export");
      return (
        e.body.deliveries.some(
          (d: { verification_id: string; event_type: string }) => d.verification_id === a.id && d.event_type === "verification.completed",
        ) || undefined
      );
    });

    // reuse: a request for the same identifier and user is offered the proof, until it is redacted
    const req = await c.post("/api/v1/verification-requests", {
      external_user_id: "user-all",
      assets: [{ type: "email", identifier: "all.one@example.com", channel: "email" }],
    });
    expect(req.status, req.text).toBe(201);
    const token = new URL(req.body.verification_url).hash.slice(1);
    const offers = () => api(stack.url).get(`/api/v1/verify/request/${req.body.id}/proofs`, { "x-request-token": token });
    expect((await offers()).body.proofs.map((p: { verification_id: string }) => p.verification_id)).toEqual([a.id]);

    const r = await c.del("/api/v1/verifications/users/user-all");
    expect(r.status, r.text).toBe(200);
    // the three, and the verification the request's asset started for the same user
    expect(r.body).toEqual({ redacted: 4, revoked: 0 });
    expect((await c.del("/api/v1/verifications/users/user-all")).body).toEqual({ redacted: 4, revoked: 0 });
    const after = await c.get("/api/v1/verifications/users/user-all/export");
    expect(after.body.verifications.map((v: { identifier: string | null }) => v.identifier)).toEqual([null, null, null, null]);
    expect(after.body.requests).toEqual([expect.objectContaining({ request_id: req.body.id, asset_index: 0 })]);
    expect(JSON.stringify(after.body)).not.toContain("all.one@example.com");
    expect((await offers()).body.proofs).toEqual([]);
    // verified users no longer list it
    await expectError(await c.get("/api/v1/verifications/users/user-all"), 404, "not_found");

    await expectError(await c.del("/api/v1/verifications/users/nobody-here"), 404, "not_found");
    await expectError(await c.get("/api/v1/verifications/users/nobody-here/export"), 404, "not_found");
  });
});

describe("retention", () => {
  // five admin CLI runs (a process each) and a sweep: more than the default 30 s on a loaded machine
  it("is set and shown with the admin CLI (1–3650) and redacts settled verifications older than that, leaving newer ones", { timeout: 90_000 }, async () => {
    await expect(adminCli(stack, "tenant", "set", "--tenant", t.tenantId, "--env", "test", "--retention-days", "3651")).rejects.toThrow(/retention_days/);
    const c = api(stack.url, t.testKey);
    const old = await verified("user-ret", "old.one@example.com");
    const oldVc = await c.post("/api/v1/verifications", { type: "email", channel: "email", identifier: "old.vc@example.com", proof_format: "sd-jwt-vc" });
    expect((await c.post(`/api/v1/verifications/${oldVc.body.id}/test-verify`)).status).toBe(200);
    expect(await adminCli(stack, "tenant", "set", "--tenant", t.tenantId, "--env", "test", "--retention-days", "2")).toEqual({
      tenant_id: t.tenantId,
      env: "test",
      retention_days: 2,
    });
    expect(await adminCli(stack, "tenant", "show", "--tenant", t.tenantId)).toEqual({
      tenant_id: t.tenantId,
      live: { retention_days: null },
      test: { retention_days: 2 },
    });
    clock.advance(3 * 24 * 3600_000);
    const fresh = await verified("user-ret", "fresh.one@example.com");
    const gone = await waitUntil("the retention sweep", async () => {
      const r = await c.get(`/api/v1/verifications/${old.id}`);
      return r.body.redacted_at ? r.body : undefined;
    });
    expect(gone.identifier).toBeNull();
    // retention's redaction erases the proof's stored SD-JWT VC too
    await waitUntil("the old SD-JWT VC erased", async () => (await storedProof(oldVc.body.id, "old.vc@example.com")).sdJwtVc === undefined);
    expect((await c.get(`/api/v1/verifications/${fresh.id}`)).body.identifier).toBe("fresh.one@example.com");
    await waitUntil("the retention webhook", () =>
      bodies().find((b) => b.event === "verification.redacted" && b.verification_id === old.id && b.reason === "retention"),
    );
    expect(await adminCli(stack, "tenant", "set", "--tenant", t.tenantId, "--env", "test", "--retention-days", "0")).toMatchObject({ retention_days: null });
  });
});
