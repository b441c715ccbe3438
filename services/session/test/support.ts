// Shared parts of the session service's unit tests (sessions.test.ts, inbound.test.ts): a real
// SessionStore (PGlite, or a fresh Postgres database when DATABASE_URL is set), a config with the
// messaging providers set, a recording logger, and in-test fakes of the verification service's
// client and of the bots' reply clients that record what they were asked.
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Client } from "@connectrpc/connect";
import type { VerificationService } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import { ManualClock, createLogger, migrate, openDatabase, parseConfig, readMigrations, ts, type Clock, type Database, type Logger } from "@icv/platform";
import { freshPostgres, type FreshPostgres } from "../../../test/support/fresh-postgres.ts";
import type { Repliers } from "../src/inbound.ts";
import { Sessions } from "../src/sessions.ts";
import { InboundStore } from "../src/store/inbound.ts";
import { SessionStore } from "../src/store/sessions.ts";

const MIGRATIONS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../migrations");

export const T0 = new Date("2026-11-22T10:00:00.000Z");
export const KEY = "session-token-key-for-unit-tests";
export const BOT = "icv_unit_bot";
export const WA_NUMBER = "+15550009999";

/** The session service's schema on PGlite, or on a fresh database of DATABASE_URL's server. */
export async function openStore(): Promise<{ store: SessionStore; inbox: InboundStore; close(): Promise<void> }> {
  const pgFresh: FreshPostgres | undefined = process.env.DATABASE_URL ? await freshPostgres(process.env.DATABASE_URL) : undefined;
  const db: Database = await openDatabase(pgFresh ? { url: pgFresh.url, poolMax: 2 } : { dataDir: "memory://" });
  await migrate(db, "session", readMigrations(MIGRATIONS));
  return {
    store: new SessionStore(db),
    inbox: new InboundStore(db),
    async close() {
      await db.close();
      await pgFresh?.drop();
    },
  };
}

/** A config with Telegram (webhook mode), WhatsApp and Viber configured, so live sessions can be made. */
export const providersConfig = () =>
  parseConfig({
    PUBLIC_BASE_URL: "https://icv.example",
    TELEGRAM_BOT_USERNAME: BOT,
    TELEGRAM_BOT_TOKEN: "7000000001:AAHk3xQ9vZ_secretpartofthetoken-0123",
    TELEGRAM_WEBHOOK_SECRET: "telegram-webhook-secret-0123",
    WHATSAPP_PHONE_NUMBER: WA_NUMBER,
    WHATSAPP_PHONE_NUMBER_ID: "1234567890",
    WHATSAPP_ACCESS_TOKEN: "whatsapp-access-token-0123456789",
    WHATSAPP_APP_SECRET: "whatsapp-app-secret-0123456789",
    VIBER_BOT_URI: "icv-unit-bot",
    VIBER_AUTH_TOKEN: "4453b6ac12345678-e02c5f12174805f9-daec6fa3d34a2f1e",
  });

/** Each test's start: a ManualClock at T0, the fake verification client on it, a recording logger, and Sessions over `store`. */
export function sessionRig(store: SessionStore) {
  const clock = new ManualClock(T0);
  const v = fakeVerification(clock);
  const log = recordingLogger();
  const sessions = new Sessions({ store, verification: v.client, config: providersConfig(), clock, key: KEY, logger: log.logger });
  return { clock, v, log, sessions };
}

/** A logger whose lines (parsed JSON) the test can read. */
export function recordingLogger(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({
    level: "info",
    destination: { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) },
  });
  return { logger, lines };
}

type Req = Record<string, unknown>;
export interface CodeAnswer {
  outcome: string;
  attemptsRemaining?: number;
  reply?: string;
}

/**
 * The verification service as the session service sees it: each call is recorded; a session's
 * verification is made once per origin (the first number wins, as the real service does); inbound
 * codes are answered by `codes` (code → its verification's channel and number) or by `onCode`.
 */
export function fakeVerification(clock: Clock) {
  const calls: { method: string; req: Req }[] = [];
  const codes = new Map<string, { channel: string; phone: string; verified?: boolean }>();
  const byOrigin = new Map<string, { id: string; identifier: string }>();
  const fake = {
    calls,
    codes,
    /** Replaces the default answer to CompleteInboundCode. */
    onCode: undefined as ((req: Req) => CodeAnswer | Promise<CodeAnswer>) | undefined,
    callsOf: (method: string) => calls.filter((c) => c.method === method).map((c) => c.req),
  };
  const client = {
    async recordTestMessage(req: Req) {
      calls.push({ method: "recordTestMessage", req });
      return {};
    },
    async completeInboundCode(req: Req): Promise<CodeAnswer> {
      calls.push({ method: "completeInboundCode", req });
      if (fake.onCode) return fake.onCode(req);
      const c = codes.get(req.code as string);
      if (!c || c.channel !== req.channel) return { outcome: "unknown_code" };
      if (c.phone !== req.sender) return { outcome: c.verified ? "not_pending" : "wrong_sender", attemptsRemaining: 4 };
      if (c.verified) return { outcome: "already_verified" };
      c.verified = true;
      return { outcome: "verified" };
    },
    async recordSessionVerification(req: Req) {
      calls.push({ method: "recordSessionVerification", req });
      const origin = req.origin as string;
      const v = byOrigin.get(origin) ?? { id: `ver_${byOrigin.size + 1}`, identifier: req.phoneNumber as string };
      byOrigin.set(origin, v);
      const now = clock.now();
      return {
        verification: {
          ...v,
          verifiedAt: ts(now),
          proof: { token: `proof-of-${v.id}`, expiresAt: ts(new Date(now.getTime() + (req.proofExpiresIn as number) * 1000)) },
        },
      };
    },
  };
  return Object.assign(fake, { client: client as unknown as Client<typeof VerificationService> });
}

export interface SentReply {
  provider: "telegram" | "whatsapp" | "sms" | "viber";
  to: string;
  text: string;
  keyboard?: unknown;
}

/** Reply clients that record what they send; `onSend` runs first (it may throw: a failing provider). */
export function fakeRepliers() {
  const sent: SentReply[] = [];
  const r = { sent, onSend: undefined as ((s: SentReply) => void | Promise<void>) | undefined };
  const send = async (s: SentReply) => {
    await r.onSend?.(s);
    sent.push(s);
  };
  const repliers: Repliers = {
    telegram: { send: (to, text, keyboard) => send({ provider: "telegram", to, text, keyboard }) },
    whatsapp: { send: (to, text) => send({ provider: "whatsapp", to, text }) },
    sms: { send: (to, text) => send({ provider: "sms", to, text }) },
    viber: {
      send: (to, text, keyboard) => send({ provider: "viber", to, text, keyboard }),
      welcome: (text, keyboard) => JSON.stringify({ welcome: text, keyboard }),
    },
  };
  return Object.assign(r, { repliers });
}
