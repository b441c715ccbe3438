import type { Client } from "@connectrpc/connect";
import type { JsonObject } from "@bufbuild/protobuf";
import QRCode from "qrcode";
import type { VerificationService } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import type { ProjectService } from "@icv/contracts/gen/icv/verification/v1/project_service_pb.ts";
import {
  AppError,
  isMessagingChannel,
  MESSAGING_CHANNELS,
  messagingAddress,
  messagingProvider,
  missingMessagingProvider,
  newId,
  providerPhone,
  toDate,
  toEnvironment,
  type Clock,
  type Config,
  type Logger,
  type Scope,
} from "@icv/platform";
import { parsePhoneNumberFromString } from "libphonenumber-js";
import type { SessionKind, SessionRow, SessionStore } from "./store/sessions.ts";
import { AUTH_PURPOSE, sessionInstructions, sessionPrefill } from "./texts.ts";
import { qrSignature, qrSignatureValid, sessionToken, tokenLookup } from "./tokens.ts";
import { checkProject, projectReply } from "./projects.ts";

/** Lifetimes (DECISIONS.md): phone-first 10 min, auth 5 min; an auth session's proof lives 10 min. */
export const SESSION_TTL_MS: Record<SessionKind, number> = { phone: 10 * 60_000, auth: 5 * 60_000 };
export const AUTH_PROOF_TTL_S = 600;
/** Proofs of phone-first sessions live as long as a verification's by default (30 days). */
export const PHONE_PROOF_TTL_S = 2_592_000;
/** The number a test phone-first session is completed with when test-verify names none. */
export const TEST_PHONE = "+15555550100";
export const AUTH_TYPES = Object.keys(AUTH_PURPOSE);
const MAX_METADATA_BYTES = 4096;
const QR_CACHE_SIZE = 1000;

/** What a message from a phone did to a session. */
export type AnswerOutcome = "verified" | "already_verified" | "wrong_sender" | "expired" | "not_pending" | "unknown";

/** A session as the service answers it: the row plus what is derived from its token. */
export interface SessionView {
  row: SessionRow;
  deepLink?: string;
  qrCode?: string;
  instructions: string;
  /** session_url: the session's hosted page. */
  pageUrl: string;
}

export interface SessionDeps {
  store: SessionStore;
  verification: Client<typeof VerificationService>;
  config: Config;
  clock: Clock;
  /** Derives session tokens and QR URL signatures. */
  key: string;
  logger: Logger;
  /** The verification service's projects: a session's project_id is checked there, and its bot replies rendered there. */
  projects?: Client<typeof ProjectService>;
}

/** A tenant's number (an auth session's phone_number): E.164 when it is a valid number. */
function validPhone(raw: string): string | undefined {
  const s = raw.trim();
  const p = parsePhoneNumberFromString(s.startsWith("+") ? s : `+${s}`);
  return p && !p.ext && p.isValid() ? p.number : undefined;
}

const rpcScope = (s: Scope) => ({ tenantId: s.tenantId, environment: toEnvironment(s.env), requestId: s.requestId ?? "" });
const scopeOfRow = (s: SessionRow): Scope => ({ tenantId: s.tenant_id, env: s.environment });

/** Phone-first and auth sessions: create, read, complete (by a message, or test-verify in test mode), expire. */
export class Sessions {
  /** Auth-session QR data URIs by session id, oldest first (bounded). */
  private readonly qrCache = new Map<string, string>();

  constructor(private readonly d: SessionDeps) {}

  /** Where the user writes: the bot's @username or URI, or our number. */
  target(channel: string): string {
    return isMessagingChannel(channel) ? messagingAddress(channel, this.d.config) : "";
  }

  /** What a session's deep link says (also the message a test session records as expected). */
  expectedMessage(s: Pick<SessionRow, "id" | "kind" | "channel" | "auth_type">): string {
    const token = sessionToken(this.d.key, s.id);
    return isMessagingChannel(s.channel) ? messagingProvider(s.channel).expectedMessage(token, sessionPrefill(s.kind, s.auth_type, token)) : token;
  }

  async create(
    scope: Scope,
    kind: SessionKind,
    input: { channel: string; phoneNumber?: string; type?: string; clientMetadata?: Record<string, unknown>; projectId?: string },
  ): Promise<SessionView> {
    const { config, clock, store } = this.d;
    if (!isMessagingChannel(input.channel)) {
      const names = `${MESSAGING_CHANNELS.slice(0, -1).join(", ")} or ${MESSAGING_CHANNELS.at(-1)}`;
      throw new AppError("validation_error", `channel must be ${names}`, {
        details: [{ field: "channel", message: `must be ${names}`, code: "invalid_enum_value" }],
      });
    }
    let phone: string | null = null;
    let authType: string | null = null;
    if (kind === "auth") {
      if (!input.phoneNumber)
        throw new AppError("validation_error", "phone_number is required", {
          details: [{ field: "phone_number", message: "required", code: "required" }],
        });
      phone = validPhone(input.phoneNumber) ?? null;
      if (!phone) throw new AppError("invalid_identifier", "phone_number is not a valid phone number (E.164, e.g. +37069199199)");
      authType = input.type ?? "2fa";
      if (!AUTH_TYPES.includes(authType)) {
        throw new AppError("validation_error", `type must be one of ${AUTH_TYPES.join(", ")}`, {
          details: [{ field: "type", message: "unknown type", code: "invalid_enum_value" }],
        });
      }
    }
    if (input.clientMetadata && Buffer.byteLength(JSON.stringify(input.clientMetadata)) > MAX_METADATA_BYTES) {
      throw new AppError("validation_error", "client_metadata must be at most 4 KB of JSON");
    }
    if (input.projectId !== undefined) await checkProject(this.d, scope, input.projectId);
    if (scope.env === "live") {
      const missing = missingMessagingProvider(input.channel, config);
      if (missing.length)
        throw new AppError("channel_unavailable", `channel ${input.channel} is not configured on this service (missing ${missing.join(", ")})`);
    }
    const now = clock.now();
    const id = newId(kind === "phone" ? "session" : "authSession", now.getTime());
    const row = await store.insert({
      id,
      kind,
      tenant_id: scope.tenantId,
      environment: scope.env,
      channel: input.channel,
      auth_type: authType,
      phone_number: phone,
      token_lookup: tokenLookup(sessionToken(this.d.key, id)),
      client_metadata: input.clientMetadata ?? null,
      created_at: now,
      expires_at: new Date(now.getTime() + SESSION_TTL_MS[kind]),
      project_id: input.projectId ?? null,
    });
    if (scope.env === "test") {
      // nothing is sent in test mode: keep the message the user would send, for GET /test/messages
      await this.d.verification.recordTestMessage({
        scope: rpcScope(scope),
        sessionId: id,
        channel: row.channel,
        direction: "inbound",
        from: phone ?? undefined,
        to: this.target(row.channel),
        text: this.expectedMessage(row),
      });
    }
    this.d.logger.info(
      { request_id: scope.requestId, tenant_id: scope.tenantId, session_id: id, kind, channel: row.channel, env: scope.env },
      "session created",
    );
    return this.view(row);
  }

  /** The session as it stands now; a pending one past its expiry is expired first. */
  async get(scope: Scope, kind: SessionKind, id: string): Promise<SessionView> {
    return this.view(await this.current(scope, kind, id));
  }

  /** Test mode: completes a pending session as if `phone` had answered it (an auth session answered by another number fails). */
  async testVerify(scope: Scope, kind: SessionKind, id: string, phone?: string): Promise<SessionView> {
    if (scope.env !== "test") throw new AppError("test_mode_required", "test-verify needs a test key (pk_test_)");
    const s = await this.current(scope, kind, id);
    const from = phone === undefined ? (kind === "auth" ? s.phone_number! : TEST_PHONE) : providerPhone(phone);
    if (!from) throw new AppError("invalid_identifier", "phone_number is not a valid phone number (E.164, e.g. +15555550100)");
    if (s.status === "verified" && s.phone_number === from) return this.view(s); // a retry after a lost answer
    if (s.status === "expired") throw new AppError("challenge_expired", "the session has expired; create a new one");
    if (s.status !== "pending") throw new AppError("invalid_state", `session is ${s.status}`);
    await this.answer(s, from);
    return this.view(await this.current(scope, kind, id));
  }

  /**
   * A message carrying this token came from `phone` over `channel`. Only live sessions answer to
   * provider messages (test sessions are completed by test-verify).
   */
  async answerToken(token: string, channel: string, phone: string): Promise<AnswerOutcome> {
    const s = await this.d.store.byTokenLookup(tokenLookup(token));
    if (!s || s.channel !== channel || s.environment !== "live") return "unknown";
    return this.answer(s, phone);
  }

  /** The reply to a session's answer from its project (projects.ts): its template's text, or its business name for the built-in text. */
  async projectReply(token: string, outcome: AnswerOutcome): Promise<{ text?: string; businessName?: string }> {
    const s = this.d.projects ? await this.d.store.byTokenLookup(tokenLookup(token)) : undefined;
    return s ? projectReply(this.d.projects!, s, outcome) : {};
  }

  /** Whether a token names a live pending session on this channel (Telegram asks for the contact only then). */
  async isOpen(token: string, channel: string): Promise<boolean> {
    const s = await this.d.store.byTokenLookup(tokenLookup(token));
    return !!s && s.channel === channel && s.environment === "live" && s.status === "pending" && s.expires_at > this.d.clock.now();
  }

  /** The session behind a session_url (its signature), with its project's business name; not_found otherwise. */
  async page(id: string, signature: string): Promise<{ view: SessionView; businessName?: string }> {
    const found = signature && (id.startsWith("sess_") || id.startsWith("auth_")) ? await this.d.store.byId(id) : undefined;
    if (!found || !qrSignatureValid(this.d.key, id, signature)) throw new AppError("not_found", "session not found");
    let s = found;
    if (s.status === "pending" && s.expires_at <= this.d.clock.now()) s = (await this.d.store.expireOne(s.id, this.d.clock.now())) ?? s;
    const businessName = this.d.projects ? (await projectReply(this.d.projects, s, "pending")).businessName : undefined;
    return { view: await this.view(s), businessName };
  }

  /** The PNG of a pending phone-first session's deep link, for its signed qr_code URL; not_found otherwise. */
  async qrPng(id: string, signature: string): Promise<Buffer> {
    const s = signature && id.startsWith("sess_") ? await this.d.store.byId(id) : undefined;
    if (!s || !qrSignatureValid(this.d.key, id, signature)) throw new AppError("not_found", "QR code not found");
    if (s.status !== "pending" || s.expires_at <= this.d.clock.now()) throw new AppError("not_found", "the session is no longer pending; its QR code is gone");
    return QRCode.toBuffer(this.deepLink(s), { type: "png", errorCorrectionLevel: "M", margin: 2, width: 320 });
  }

  async expireDue(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.d.store.expireDue(this.d.clock.now());
      total += n;
      if (n < 500) return total;
    }
  }

  /** Settles a pending session answered from `phone`. */
  private async answer(s: SessionRow, phone: string): Promise<AnswerOutcome> {
    const now = this.d.clock.now();
    if (s.status === "pending" && s.expires_at <= now) {
      await this.d.store.expireOne(s.id, now);
      return "expired";
    }
    if (s.status === "expired") return "expired";
    if (s.status !== "pending") return s.status === "verified" && s.phone_number === phone ? "already_verified" : "not_pending";
    const log = { tenant_id: s.tenant_id, session_id: s.id, kind: s.kind, channel: s.channel };
    if (s.kind === "auth" && s.phone_number !== phone) {
      const failed = await this.d.store.markFailed(s, now);
      this.d.logger.info({ ...log, outcome: "wrong_sender" }, "session answered");
      return failed ? "wrong_sender" : this.answerAgain(s, phone);
    }
    const r = await this.d.verification.recordSessionVerification({
      scope: rpcScope(scopeOfRow(s)),
      channel: s.channel,
      phoneNumber: phone,
      origin: s.id,
      proofExpiresIn: s.kind === "auth" ? AUTH_PROOF_TTL_S : PHONE_PROOF_TTL_S,
      clientMetadata: (s.client_metadata as JsonObject | null) ?? undefined,
      projectId: s.project_id ?? undefined,
    });
    const v = r.verification!;
    // another number got there first (the verification of a session is made once)
    if (v.identifier !== phone) return "not_pending";
    const done = await this.d.store.markVerified(
      s,
      { phone, verificationId: v.id, proofToken: v.proof!.token, proofExpiresAt: toDate(v.proof!.expiresAt)! },
      toDate(v.verifiedAt) ?? now,
    );
    this.d.logger.info({ ...log, verification_id: v.id, outcome: "verified" }, "session answered");
    return done ? "verified" : this.answerAgain(s, phone);
  }

  /** The session moved while it was being answered: answer from where it is now. */
  private async answerAgain(s: SessionRow, phone: string): Promise<AnswerOutcome> {
    const cur = await this.d.store.byId(s.id);
    return cur && cur.status !== "pending" ? this.answer(cur, phone) : "not_pending";
  }

  private async current(scope: Scope, kind: SessionKind, id: string): Promise<SessionRow> {
    const s = await this.d.store.get(scope, kind, id);
    if (!s) throw new AppError("not_found", `${kind === "phone" ? "session" : "auth session"} not found`);
    if (s.status === "pending" && s.expires_at <= this.d.clock.now()) {
      return (await this.d.store.expireOne(s.id, this.d.clock.now())) ?? (await this.current(scope, kind, id));
    }
    return s;
  }

  /** The provider's link: the bot with the token as its payload, or the app with the text to send filled in. */
  private deepLink(s: SessionRow): string {
    const token = sessionToken(this.d.key, s.id);
    if (!isMessagingChannel(s.channel)) return "";
    return messagingProvider(s.channel).deepLink(this.target(s.channel), token, sessionPrefill(s.kind, s.auth_type, token));
  }

  /** An auth session's QR data URI, rendered once per session (clients poll GET while pending). */
  private async authQr(id: string, deepLink: string): Promise<string> {
    let uri = this.qrCache.get(id);
    if (!uri) {
      uri = await QRCode.toDataURL(deepLink, { errorCorrectionLevel: "M", margin: 2, width: 256 });
      this.qrCache.set(id, uri);
      if (this.qrCache.size > QR_CACHE_SIZE) this.qrCache.delete(this.qrCache.keys().next().value!);
    }
    return uri;
  }

  private async view(row: SessionRow): Promise<SessionView> {
    const provider = isMessagingChannel(row.channel) ? messagingProvider(row.channel) : undefined;
    const instructions = sessionInstructions(row.kind, provider?.label ?? row.channel, provider?.flow ?? "number", row.auth_type, this.target(row.channel));
    // the page the user can be sent to; its signature is the QR image's (the same public face of the session)
    const pageUrl = `${this.d.config.publicBaseUrl}/session/${row.id}#${qrSignature(this.d.key, row.id)}`;
    if (row.status !== "pending") return { row, instructions, pageUrl };
    const deepLink = this.deepLink(row);
    const qrCode =
      row.kind === "phone"
        ? `${this.d.config.publicBaseUrl}/api/v1/sessions/${row.id}/qr.png?sig=${qrSignature(this.d.key, row.id)}`
        : await this.authQr(row.id, deepLink);
    return { row, deepLink, qrCode, instructions, pageUrl };
  }
}
