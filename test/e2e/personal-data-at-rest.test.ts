// Personal data at rest (DECISIONS.md, "Personal data: at rest, retention, erasure, export"):
// verifications made with distinctive identifiers, through the API as a tenant makes them (phone
// and email, test and live keys, a verified one with its proof, a request asset, a test inbox
// message, an auth session, an Idempotency-Key answer, client_metadata that went out in a webhook: in
// the outbox, the event log and the stored delivery body), then a CHECKPOINT: none of those identifiers is in clear anywhere in the data
// directory (the embedded database's files, WAL included) nor, on the Postgres column, in a
// pg_dump of the database.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { createLogger, openDatabase, parseConfig } from "@icv/platform";
import { startVerificationService } from "../../services/verification/src/start.ts";
import { CHANNEL_CONFIG } from "../../services/verification/src/channels/registry.ts";
import { startWebhookService } from "../../services/webhook/src/start.ts";
import { startReceiver, type Receiver } from "../support/receiver.ts";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";

let rx: Receiver;
beforeAll(async () => {
  rx = await startReceiver(200);
});
afterAll(() => rx?.close());
const stack = useStack({
  ALLOW_PRIVATE_TARGETS: "true",
  SMS_PHONE_NUMBER: "+15550002000",
  TWILIO_ACCOUNT_SID: "AC0123456789abcdef0123456789abcdef",
  TWILIO_AUTH_TOKEN: "twilio-auth-token-1",
});
const t = useTenant(stack, "Personal data at rest");

// distinctive enough that no key, hash or page of the database holds them by chance
const PHONE_DIGITS = "69158273";
const EMAIL_LOCAL = "zyxquokka.privacy";
const REQUEST_EMAIL_LOCAL = "wombatqx.request";
const METADATA = "numbatqz.crm";
const NEEDLES = [PHONE_DIGITS, EMAIL_LOCAL, REQUEST_EMAIL_LOCAL, METADATA];

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    const s = statSync(p);
    return s.isDirectory() ? filesUnder(p) : s.isFile() ? [p] : [];
  });
}

/** The needles found in clear in `haystack`, each with where. */
const foundIn = (haystack: Buffer, where: string) =>
  NEEDLES.filter((n) => haystack.includes(Buffer.from(n, "utf8")) || haystack.includes(Buffer.from(n.toUpperCase(), "utf8"))).map((n) => `${n} in ${where}`);

describe("personal data at rest", () => {
  it("keeps no identifier in clear in the data dir (WAL included) or a pg_dump", async () => {
    const test = api(stack.url, t.testKey);
    const live = api(stack.url, t.liveKey);
    await stack.admin.setWebhookEndpoint({ tenantId: t.tenantId, environment: Environment.TEST, url: rx.url }, { headers: stack.adminHeaders });
    const phone = `+370 ${PHONE_DIGITS.slice(0, 3)} ${PHONE_DIGITS.slice(3)}`;
    const made = [
      await test.post("/api/v1/verifications", {
        type: "phone",
        channel: "whatsapp",
        identifier: phone,
        external_user_id: "user-pd",
        client_metadata: { n: 1, crm: METADATA },
      }),
      await test.post("/api/v1/verifications", { type: "email", channel: "email", identifier: `${EMAIL_LOCAL}@example.com`, external_user_id: "user-pd" }),
      await live.post("/api/v1/verifications", { type: "phone", channel: "sms", identifier: phone, external_user_id: "user-pd" }),
    ];
    // an Idempotency-Key create: the gateway stores its answer (sealed) and replays it opened
    const idem = { "idempotency-key": "pd-at-rest-1" };
    const first = await test.post("/api/v1/verifications", { type: "email", channel: "email", identifier: `idem.${EMAIL_LOCAL}@example.com` }, idem);
    const replay = await test.post("/api/v1/verifications", { type: "email", channel: "email", identifier: `idem.${EMAIL_LOCAL}@example.com` }, idem);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(first.body);
    expect(replay.body.identifier).toBe(`idem.${EMAIL_LOCAL}@example.com`);
    for (const r of made) expect(r.status, r.text).toBe(201);
    // an auth session for the same number (the session service keeps it sealed too)
    const session = await test.post("/api/v1/auth/sessions", { channel: "whatsapp", phone_number: phone, client_metadata: { n: 2 } });
    expect(session.status, session.text).toBe(201);
    const verified = await test.post(`/api/v1/verifications/${made[0].body.id}/test-verify`);
    expect(verified.status, verified.text).toBe(200);
    // the webhook receiver gets the metadata in clear, and the delivery log shows it: only the storage is sealed
    const completedBody = async () =>
      rx.requests.map((r) => JSON.parse(r.body)).find((b) => b.event === "verification.completed" && b.verification_id === made[0].body.id);
    for (let i = 0; i < 150 && !(await completedBody()); i++) await new Promise((r) => setTimeout(r, 100));
    expect((await completedBody())?.client_metadata).toEqual({ n: 1, crm: METADATA });
    const log = await test.get(`/api/v1/webhook-deliveries?event_type=verification.completed`);
    expect(log.body.data).toHaveLength(1);
    expect(JSON.stringify((await test.get(`/api/v1/webhook-deliveries/${log.body.data[0].id}`)).body)).toContain(METADATA);
    // what the API answers is the identifier in clear: only the storage is sealed
    expect((await test.get(`/api/v1/verifications/${made[1].body.id}`)).body.identifier).toBe(`${EMAIL_LOCAL}@example.com`);
    const inbox = await test.get(`/api/v1/test/messages?verification_id=${made[1].body.id}`);
    expect(inbox.body.data[0].to).toBe(`${EMAIL_LOCAL}@example.com`);
    const request = await test.post("/api/v1/verification-requests", {
      assets: [{ type: "email", identifier: `${REQUEST_EMAIL_LOCAL}@example.com`, channel: "email" }],
    });
    expect(request.status, request.text).toBe(201);
    expect(JSON.stringify((await test.get(`/api/v1/verification-requests/${request.body.id}`)).body)).toContain(REQUEST_EMAIL_LOCAL);

    const dbUrl = stack.env.DATABASE_URL;
    const db = await openDatabase(dbUrl ? { url: dbUrl, poolMax: 1 } : { dataDir: path.join(stack.dataDir, "pgdata") });
    try {
      await db.query("CHECKPOINT");
    } finally {
      await db.close();
    }
    const found = filesUnder(stack.dataDir).flatMap((f) => foundIn(readFileSync(f), path.relative(stack.dataDir, f)));
    if (dbUrl) found.push(...foundIn(execFileSync("pg_dump", ["--data-only", dbUrl], { maxBuffer: 1 << 30 }), "pg_dump"));
    expect(found).toEqual([]);
  });

  it("refuses to start on sealed rows with a wrong or missing DATA_ENCRYPTION_KEY, naming the key version it needs", async () => {
    const made = await api(stack.url, t.testKey).post("/api/v1/verifications", { type: "email", channel: "email", identifier: "sealed.row@example.com" });
    expect(made.status, made.text).toBe(201);
    const start = (key: string) =>
      startVerificationService(
        parseConfig({ ...stack.env, VERIFICATION_GRPC_PORT: "0", DATA_ENCRYPTION_KEY: key }, CHANNEL_CONFIG),
        createLogger({ level: "silent" }),
      );
    await expect(start(randomBytes(32).toString("base64"))).rejects.toThrow(/key version 1 is not the key/);
    await expect(start(`2:${randomBytes(32).toString("base64")}`)).rejects.toThrow(/missing key version 1/);
    // the webhook service, on the delivery bodies the first test stored sealed
    const startWebhook = (key: string) =>
      startWebhookService(parseConfig({ ...stack.env, WEBHOOK_GRPC_PORT: "0", DATA_ENCRYPTION_KEY: key }), createLogger({ level: "silent" }));
    await expect(startWebhook(randomBytes(32).toString("base64"))).rejects.toThrow(/key version 1 is not the key/);
    await expect(startWebhook(`2:${randomBytes(32).toString("base64")}`)).rejects.toThrow(/missing key version 1/);
    // the running service is untouched
    expect((await api(stack.url, t.testKey).get(`/api/v1/verifications/${made.body.id}`)).body.identifier).toBe("sealed.row@example.com");
  });
});
