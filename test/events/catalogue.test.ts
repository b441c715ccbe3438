// The event catalogue keeps the wire format: today's payloads (as the untyped producers wrote
// them before icv.events.v1) are held here as fixtures; every typed producer must write exactly
// these bytes, and every event type of the table must read back and write out unchanged, so
// consumers that run older code and rows already in an outbox keep working.
import { createHash } from "node:crypto";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  decodeEvent,
  EVENT_SCHEMAS,
  eventPayload,
  migrate,
  openDatabase,
  openEventMetadata,
  outboxMigrations,
  PersonalData,
  readMigrations,
  wireJson,
  type Database,
  type EventType,
} from "@icv/platform";
import { create } from "@bufbuild/protobuf";
import { TenantScopeSchema } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { maybeFreshPostgres, type FreshPostgres } from "../support/fresh-postgres.ts";
import { statusEvents as statusEventsOf, suspensionEvent as suspensionEventOf } from "../../services/verification/src/events.ts";
import { requestEvent } from "../../services/verification/src/requests/decide.ts";
import type { RequestAssetView, RequestView, VerificationRow } from "../../services/verification/src/store/index.ts";
import { ProofStore } from "../../services/proof/src/store/proofs.ts";
import { GatewayStore } from "../../services/gateway/src/store.ts";
import { SettingsStore } from "../../services/webhook/src/store/settings.ts";

const AT = new Date("2026-03-01T12:00:00.000Z"); // on the second: the JSON mapping alone would drop ".000"
// a proof's events name it as a log entry does: the JWT's SHA-256 and the subject (here an email's salted hash)
const TOKEN_SHA = createHash("sha256").update("eyJ.a.b").digest("hex");
const SUBJECT = "5".repeat(64);
const LATER = new Date("2026-03-01T12:00:05.123Z");
const EXPIRES = new Date("2026-03-31T12:00:05.123Z");
// the tenant's own object: a timestamp-looking string stays as given, a "__proto__" key stays a key
const META = JSON.parse(
  `{"plan":"pro","tags":["a",1,null,true],"nested":{"ok":true,"n":1.5},"when":"2026-03-01T12:00:00Z","__proto__":{"polluted":true}}`,
) as Record<string, unknown>;

/** Today's payloads, byte for byte as JSON.stringify wrote them. */
const FIXTURES = {
  created: `{"verification_id":"ver_01J00000000000000000000001","type":"email","channel":"email","status":"pending","previous_status":null,"changed_at":"2026-03-01T12:00:00.000Z"}`,
  verified: `{"verification_id":"ver_01J00000000000000000000001","type":"email","channel":"email","status":"verified","previous_status":"pending","changed_at":"2026-03-01T12:00:05.123Z","verified_at":"2026-03-01T12:00:05.123Z","proof":{"token":"eyJ.a.b","expires_at":"2026-03-31T12:00:05.123Z"}}`,
  completed: `{"verification_id":"ver_01J00000000000000000000001","type":"email","channel":"email","status":"verified","verified_at":"2026-03-01T12:00:05.123Z","external_user_id":"user-42","client_metadata":{"plan":"pro","tags":["a",1,null,true],"nested":{"ok":true,"n":1.5},"when":"2026-03-01T12:00:00Z","__proto__":{"polluted":true}},"proof":{"token":"eyJ.a.b","expires_at":"2026-03-31T12:00:05.123Z"}}`,
  completedBare: `{"verification_id":"ver_01J00000000000000000000001","type":"email","channel":"email","status":"verified","verified_at":"2026-03-01T12:00:05.123Z","external_user_id":null,"client_metadata":null,"proof":{"token":"eyJ.a.b","expires_at":"2026-03-31T12:00:05.123Z"}}`,
  revoked: `{"verification_id":"ver_01J00000000000000000000001","type":"email","channel":"email","status":"revoked","previous_status":"verified","changed_at":"2026-03-01T12:00:00.000Z","revoked_at":"2026-03-01T12:00:00.000Z","revoked_reason":"fraud"}`,
  failed: `{"verification_id":"ver_01J00000000000000000000001","type":"email","channel":"email","status":"failed","previous_status":"pending","changed_at":"2026-03-01T12:00:00.000Z"}`,
  // issue 26: a suspension's status_changed, and the webhook events of a suspension and of its end (a proof with a salt and an SD-JWT VC)
  suspendedChanged: `{"verification_id":"ver_01J00000000000000000000001","type":"email","channel":"email","status":"suspended","previous_status":"verified","changed_at":"2026-03-01T12:00:00.000Z","suspended_at":"2026-03-01T12:00:00.000Z","suspended_reason":"record_missing"}`,
  suspended: `{"verification_id":"ver_01J00000000000000000000001","type":"email","channel":"email","status":"suspended","verified_at":"2026-03-01T12:00:05.123Z","external_user_id":null,"client_metadata":null,"proof":{"token":"eyJ.a.b","expires_at":"2026-03-31T12:00:05.123Z","identifier_salt":"00112233445566778899aabbccddeeff","sd_jwt_vc":"eyJ.c.d~WyJz~"},"suspended_at":"2026-03-01T12:00:00.000Z","reason":"record_missing"}`,
  reinstated: `{"verification_id":"ver_01J00000000000000000000001","type":"email","channel":"email","status":"verified","verified_at":"2026-03-01T12:00:05.123Z","external_user_id":null,"client_metadata":null,"proof":{"token":"eyJ.a.b","expires_at":"2026-03-31T12:00:05.123Z","identifier_salt":"00112233445566778899aabbccddeeff","sd_jwt_vc":"eyJ.c.d~WyJz~"},"suspended_at":"2026-03-01T12:00:00.000Z","reason":"record_missing"}`,
  requestCompleted: `{"request_id":"vreq_01J00000000000000000000001","reference_id":"order-7","status":"completed","proofs":[{"asset_index":0,"type":"email","verification_id":"ver_01J00000000000000000000001","proof_token":"eyJ.a.b","expires_at":"2026-03-31T12:00:05.123Z"},{"asset_index":2,"type":"phone","verification_id":"ver_01J00000000000000000000003","proof_token":"eyJ.c.d","expires_at":"2026-03-31T12:00:05.123Z"}],"external_user_id":"user-42","changed_at":"2026-03-01T12:00:00.000Z","callback_url":"https://shop.example/cb"}`,
  requestPartial: `{"request_id":"vreq_01J00000000000000000000001","reference_id":null,"status":"partial","proofs":[{"asset_index":0,"type":"email","verification_id":"ver_01J00000000000000000000001","proof_token":"eyJ.a.b","expires_at":"2026-03-31T12:00:05.123Z"}],"changed_at":"2026-03-01T12:00:05.123Z"}`,
  requestExpired: `{"request_id":"vreq_01J00000000000000000000001","reference_id":null,"status":"expired","proofs":[],"changed_at":"2026-03-01T12:00:00.000Z"}`,
  proofIssued: `{"proof_id":"ver_01J00000000000000000000001","kid":"kid-1","type":"email","channel":"email","method":"otp","expires_at":"2026-03-31T12:00:05.123Z","token_sha256":"${TOKEN_SHA}","env":"live","subject":"${SUBJECT}","format":"jwt","status_list":"live-0","status_idx":7}`,
  proofSuspended: `{"proof_id":"ver_01J00000000000000000000001","reason":"record_missing","suspended_at":"2026-03-01T12:00:00.000Z","token_sha256":"${TOKEN_SHA}","env":"live","type":"email","channel":"email","method":"otp","subject":"${SUBJECT}","status_list":"live-0"}`,
  proofReinstated: `{"proof_id":"ver_01J00000000000000000000001","reinstated_at":"2026-03-01T12:00:05.123Z","suspended_at":"2026-03-01T12:00:00.000Z","reason":"record_missing","token_sha256":"${TOKEN_SHA}","env":"live","type":"email","channel":"email","method":"otp","subject":"${SUBJECT}","status_list":"live-0"}`,
  proofRevoked: `{"proof_id":"ver_01J00000000000000000000001","reason":"fraud","revoked_at":"2026-03-01T12:00:09.000Z","token_sha256":"${TOKEN_SHA}","env":"live","type":"email","channel":"email","method":"otp","subject":"${SUBJECT}","status_list":"live-0"}`,
  redacted: `{"verification_id":"ver_01J00000000000000000000001","type":"email","channel":"email","status":"verified","redacted_at":"2026-03-01T12:00:00.000Z","proof_revoked":false,"reason":"request"}`,
  tenantCreated: `{"tenant_id":"ten_01J00000000000000000000001","name":"Acme & Co \\"quoted\\""}`,
  apiKeyCreated: `{"key_id":"key_01J00000000000000000000002","prefix":"pk_test_abcd"}`,
  apiKeyRevoked: `{"key_id":"key_01J00000000000000000000002"}`,
  webhookSecretCreated: `{"tenant_id":"ten_01J00000000000000000000001"}`,
  webhookSecretRotated: `{"tenant_id":"ten_01J00000000000000000000001","previous_expires_at":"2026-03-02T12:00:00.000Z"}`,
};

/** A fixture of every type of the table (the round trip covers them all). */
const BY_TYPE: Record<EventType, string[]> = {
  "verification.status_changed": [FIXTURES.created, FIXTURES.verified, FIXTURES.revoked, FIXTURES.failed, FIXTURES.suspendedChanged],
  "verification.completed": [FIXTURES.completed, FIXTURES.completedBare],
  "verification.suspended": [FIXTURES.suspended],
  "verification.reinstated": [FIXTURES.reinstated],
  "verification.redacted": [FIXTURES.redacted],
  "verification_request.partial": [FIXTURES.requestPartial],
  "verification_request.completed": [FIXTURES.requestCompleted],
  "verification_request.expired": [FIXTURES.requestExpired],
  "proof.issued": [FIXTURES.proofIssued],
  "proof.revoked": [FIXTURES.proofRevoked],
  "proof.suspended": [FIXTURES.proofSuspended],
  "proof.reinstated": [FIXTURES.proofReinstated],
  "tenant.created": [FIXTURES.tenantCreated],
  "api_key.created": [FIXTURES.apiKeyCreated],
  "api_key.revoked": [FIXTURES.apiKeyRevoked],
  "webhook_secret.created": [FIXTURES.webhookSecretCreated],
  "webhook_secret.rotated": [FIXTURES.webhookSecretRotated],
};

const row = (over: Partial<VerificationRow>): VerificationRow => ({
  id: "ver_01J00000000000000000000001",
  tenant_id: "ten_01J00000000000000000000001",
  environment: "test",
  type: "email",
  channel: "email",
  identifier: "j@example.com",
  identifier_canonical: "j@example.com",
  status: "pending",
  code_hmac: "h",
  challenge_expires_at: AT,
  instruction: "",
  deep_link: null,
  challenge_message: null,
  attempts: 0,
  max_attempts: 5,
  client_metadata: META,
  external_user_id: "user-42",
  proof_expires_in: 2_592_000,
  proof_token: null,
  proof_expires_at: null,
  created_at: AT,
  updated_at: AT,
  verified_at: null,
  revoked_at: null,
  revoked_reason: null,
  resend_count: 0,
  code_sent_at: null,
  method: null,
  reused_from: null,
  code_lookup: null,
  origin: null,
  delivery: null,
  callback_url: null,
  proof_format: "jwt",
  holder_key: null,
  proof_identifier_salt: null,
  proof_sd_jwt_vc: null,
  suspended_at: null,
  suspended_reason: null,
  ...over,
});
const verified = (over: Partial<VerificationRow> = {}) =>
  row({ status: "verified", verified_at: LATER, proof_token: "eyJ.a.b", proof_expires_at: EXPIRES, method: "otp", ...over });

const asset = (idx: number, over: Partial<RequestAssetView>): RequestAssetView => ({
  request_id: "vreq_01J00000000000000000000001",
  idx,
  type: "email",
  identifier: null,
  channel: null,
  allowed_channels: null,
  required: true,
  status: "pending",
  verification_id: null,
  starts: 0,
  v_status: null,
  v_verified_at: null,
  proof_identifier_salt: null,
  proof_sd_jwt_vc: null,
  proof_token: null,
  proof_expires_at: null,
  ...over,
});
const request = (over: Partial<RequestView>): RequestView => ({
  id: "vreq_01J00000000000000000000001",
  tenant_id: "ten_01J00000000000000000000001",
  environment: "live",
  status: "pending",
  reference_id: null,
  action_type: "verify",
  action_title: null,
  action_description: null,
  redirect_url: null,
  callback_url: null,
  partial_ok: true,
  external_user_id: null,
  client_metadata: null,
  created_at: AT,
  updated_at: AT,
  expires_at: EXPIRES,
  completed_at: null,
  cancelled_at: null,
  max_proof_age: null,
  assets: [
    asset(0, {
      status: "verified",
      verification_id: "ver_01J00000000000000000000001",
      v_status: "verified",
      v_verified_at: LATER,
      proof_token: "eyJ.a.b",
      proof_expires_at: EXPIRES,
    }),
    asset(1, { status: "in_progress", verification_id: "ver_01J00000000000000000000002", v_status: "pending" }),
  ],
  ...over,
});

// client_metadata travels sealed (sealed_client_metadata, docs/privacy.md): the payloads below are
// compared with it opened back in its place, and the sealed form is checked on its own
const PD = PersonalData.ephemeral();
const opened = (e: { payload: unknown }) => {
  const p = { ...(e.payload as Record<string, unknown>) };
  if (typeof p.sealed_client_metadata === "string") {
    p.client_metadata = openEventMetadata(PD, p.verification_id as string, p.sealed_client_metadata) ?? null;
    delete p.sealed_client_metadata;
  }
  return p;
};
const written = (events: { eventType: string; payload: unknown }[]) => events.map((e) => [e.eventType, JSON.stringify(opened(e))]);
const statusEvents = (v: VerificationRow, previous: Parameters<typeof statusEventsOf>[2], at: Date) => statusEventsOf(PD, v, previous, at);
const suspensionEvent = (v: VerificationRow, before: VerificationRow) => suspensionEventOf(PD, v, before);

describe("the verification service's events", () => {
  it("writes today's status_changed and completed payloads, byte for byte", () => {
    expect(written(statusEvents(row({}), null, AT))).toEqual([["verification.status_changed", FIXTURES.created]]);
    expect(written(statusEvents(verified(), "pending", LATER))).toEqual([
      ["verification.status_changed", FIXTURES.verified],
      ["verification.completed", FIXTURES.completed],
    ]);
    // in the outbox and the event log the tenant's metadata is sealed: not one of its values in clear
    const [, completed] = statusEvents(verified(), "pending", LATER);
    const raw = JSON.stringify(completed.payload);
    expect(raw).toMatch(/"client_metadata":null,.*"sealed_client_metadata":"pd1\./);
    expect(raw).not.toContain("plan");
    expect(raw).not.toContain("polluted");
    expect(() =>
      openEventMetadata(PD, "ver_01J00000000000000000000002", (completed.payload as { sealed_client_metadata: string }).sealed_client_metadata),
    ).toThrow();
    expect(written(statusEvents(verified({ external_user_id: null, client_metadata: null }), "pending", LATER))[1]).toEqual([
      "verification.completed",
      FIXTURES.completedBare,
    ]);
    expect(written(statusEvents(verified({ status: "revoked", revoked_at: AT, revoked_reason: "fraud" }), "verified", AT))).toEqual([
      ["verification.status_changed", FIXTURES.revoked],
    ]);
    expect(written(statusEvents(row({ status: "failed" }), "pending", AT))).toEqual([["verification.status_changed", FIXTURES.failed]]);
  });

  it("writes a suspension and a reinstatement: status_changed, then verification.suspended / .reinstated (a reinstatement is no new completion)", () => {
    const proof = {
      proof_identifier_salt: "00112233445566778899aabbccddeeff",
      proof_sd_jwt_vc: "eyJ.c.d~WyJz~",
      external_user_id: null,
      client_metadata: null,
    };
    const before = verified(proof);
    const suspended = verified({ ...proof, status: "suspended", suspended_at: AT, suspended_reason: "record_missing" });
    expect(written([...statusEvents(suspended, "verified", AT), suspensionEvent(suspended, before)])).toEqual([
      ["verification.status_changed", FIXTURES.suspendedChanged],
      ["verification.suspended", FIXTURES.suspended],
    ]);
    const back = written([...statusEvents(before, "suspended", LATER), suspensionEvent(before, suspended)]);
    expect(back.map(([t]) => t)).toEqual(["verification.status_changed", "verification.reinstated"]);
    expect(back[1][1]).toBe(FIXTURES.reinstated);
  });

  it("writes today's request payloads, byte for byte", () => {
    const done = request({
      reference_id: "order-7",
      external_user_id: "user-42",
      callback_url: "https://shop.example/cb",
      assets: [
        ...request({}).assets.slice(0, 1),
        asset(1, { required: false, status: "failed", verification_id: "ver_01J00000000000000000000002", v_status: "failed" }),
        asset(2, {
          type: "phone",
          status: "verified",
          verification_id: "ver_01J00000000000000000000003",
          v_status: "verified",
          proof_token: "eyJ.c.d",
          proof_expires_at: EXPIRES,
        }),
      ],
    });
    expect(written([requestEvent(done, "completed", AT)])).toEqual([["verification_request.completed", FIXTURES.requestCompleted]]);
    expect(written([requestEvent(request({}), "partial", LATER)])).toEqual([["verification_request.partial", FIXTURES.requestPartial]]);
    expect(written([requestEvent(request({ assets: [] }), "expired", AT)])).toEqual([["verification_request.expired", FIXTURES.requestExpired]]);
  });
});

describe("the stores' events, as their outbox rows hold them", () => {
  let pg: FreshPostgres | undefined;
  let db: Database;
  const outbox = async (schema: string) =>
    (
      await db.query<{ event_type: string; environment: string; payload: unknown }>(`SELECT event_type, environment, payload FROM ${schema}.outbox ORDER BY id`)
    ).rows.map((r) => [r.event_type, r.environment, r.payload]);
  const json = (s: string) => JSON.parse(s) as unknown;

  beforeAll(async () => {
    pg = await maybeFreshPostgres();
    db = await openDatabase({ url: pg?.url, dataDir: "memory://" });
    for (const svc of ["proof", "gateway", "webhook"]) {
      await migrate(db, svc, [...readMigrations(path.join(import.meta.dirname, "../../services", svc, "migrations")), ...outboxMigrations(svc)]);
    }
  });
  afterAll(async () => {
    await db?.close();
    await pg?.drop();
  });

  it("proof: issued, suspended, reinstated and revoked", async () => {
    const store = new ProofStore(db);
    const scope = { tenantId: "ten_01J00000000000000000000001", env: "live" as const };
    await db.query(`INSERT INTO proof.signing_keys (kid, environment, public_jwk, private_key_enc, status) VALUES ('kid-1', 'live', '{}', 'x', 'active')`);
    await store.insertProof({
      id: "ver_01J00000000000000000000001",
      scope,
      kid: "kid-1",
      type: "email",
      channel: "email",
      identifierHash: SUBJECT,
      identifierSalt: "00".repeat(16),
      subject: SUBJECT,
      method: "otp",
      token: "eyJ.a.b",
      statusList: 0,
      statusIdx: 7,
      verifiedAt: LATER,
      issuedAt: new Date(AT.getTime() - 1000),
      expiresAt: EXPIRES,
    });
    await store.suspend(scope, "ver_01J00000000000000000000001", "record_missing", AT);
    await store.reinstate(scope, "ver_01J00000000000000000000001", LATER);
    await store.revoke(scope, "ver_01J00000000000000000000001", "fraud", new Date("2026-03-01T12:00:09.000Z"));
    expect(await outbox("proof")).toEqual([
      ["proof.issued", "live", json(FIXTURES.proofIssued)],
      ["proof.suspended", "live", json(FIXTURES.proofSuspended)],
      ["proof.reinstated", "live", json(FIXTURES.proofReinstated)],
      ["proof.revoked", "live", json(FIXTURES.proofRevoked)],
    ]);
  });

  it("gateway: tenant and api key events", async () => {
    const store = new GatewayStore(db);
    await store.createTenant({ id: "ten_01J00000000000000000000001", name: 'Acme & Co "quoted"', at: AT }, []);
    await store.createKey({
      id: "key_01J00000000000000000000002",
      tenantId: "ten_01J00000000000000000000001",
      env: "test",
      hash: "h",
      prefix: "pk_test_abcd",
      at: AT,
    });
    await store.revokeKey("key_01J00000000000000000000002", LATER);
    expect(await outbox("gateway")).toEqual([
      ["tenant.created", "live", json(FIXTURES.tenantCreated)],
      ["tenant.created", "test", json(FIXTURES.tenantCreated)],
      ["api_key.created", "test", json(FIXTURES.apiKeyCreated)],
      ["api_key.revoked", "test", json(FIXTURES.apiKeyRevoked)],
    ]);
  });

  it("webhook: secret created and rotated", async () => {
    const store = new SettingsStore(db);
    await store.ensureSecrets("ten_01J00000000000000000000001", { live: "whsec_bGl2ZQ==", test: "whsec_dGVzdA==" }, AT);
    await store.rotateSecret("ten_01J00000000000000000000001", "live", "whsec_bmV3", LATER, new Date("2026-03-02T12:00:00.000Z"));
    expect(await outbox("webhook")).toEqual([
      ["webhook_secret.created", "live", json(FIXTURES.webhookSecretCreated)],
      ["webhook_secret.created", "test", json(FIXTURES.webhookSecretCreated)],
      ["webhook_secret.rotated", "live", json(FIXTURES.webhookSecretRotated)],
    ]);
    expect(JSON.stringify(await outbox("webhook"))).not.toContain("whsec_");
  });
});

describe("the catalogue", () => {
  it("has a message for every event type, and each type's payloads read back and write out unchanged", () => {
    expect(Object.keys(BY_TYPE).sort()).toEqual(Object.keys(EVENT_SCHEMAS).sort());
    for (const [type, payloads] of Object.entries(BY_TYPE) as [EventType, string[]][]) {
      for (const p of payloads) {
        const m = decodeEvent(type, JSON.parse(p) as Record<string, unknown>);
        expect(m.$typeName).toBe(EVENT_SCHEMAS[type].typeName);
        expect(JSON.stringify(eventPayload(type, m))).toBe(p);
      }
    }
    // client_metadata's "__proto__" member went through as data, not as a prototype
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("reads what it does not know as nothing, and null as unset", () => {
    const m = decodeEvent("verification.completed", { ...JSON.parse(FIXTURES.completedBare), added_later: { x: 1 } });
    expect(m.externalUserId).toBeUndefined();
    expect(m.clientMetadata).toBeUndefined();
    expect(m.verifiedAt && new Date(Number(m.verifiedAt.seconds) * 1000 + m.verifiedAt.nanos / 1e6).toISOString()).toBe("2026-03-01T12:00:05.123Z");
  });

  it("refuses to write a field kind whose JSON it does not know (an enum), naming the field", () => {
    expect(() => wireJson(TenantScopeSchema, create(TenantScopeSchema, { tenantId: "ten_1" }))).toThrow(/icv\.common\.v1\.TenantScope\.environment/);
  });
});
