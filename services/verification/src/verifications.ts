import { createHash, timingSafeEqual } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import type { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import {
  AppError, newId, providerPhone, toDate, toEnvironment, ts,
  type Clock, type Config, type Logger, type ProofMethod, type Scope, type TwilioClient, type WhatsAppClient,
} from "@icv/platform";
import { codeHmac, codeLookup } from "./challenge.ts";
import { ASSET_TYPES, CHANNELS_BY_TYPE, TTL_MS, buildChallenge, channelOf, deliveryOf, maskIdentifier, missingProvider, normalizeIdentifier, type AssetType, type Evidence } from "./channels/index.ts";
import { codeTarget, deliverCode, testMessageOf } from "./delivery.ts";
import type { Mailer } from "./mailer.ts";
import type { SendLimits } from "./send-limits.ts";
import type { ListFilter, Status, TestMessageRow, VerificationRow, VerificationStore } from "./store/index.ts";

export const MAX_ATTEMPTS = 5;
/** Email code resends (DECISIONS.md): at most MAX_RESENDS in all, at least RESEND_GAP_MS after the last send. */
export const MAX_RESENDS = 5;
export const RESEND_GAP_MS = 60_000;
export const DEFAULT_PROOF_TTL_S = 2_592_000;
const MAX_METADATA_BYTES = 4096;

export interface CreateInput {
  type: string;
  channel: string;
  identifier: string;
  clientMetadata?: Record<string, unknown>;
  externalUserId?: string;
  proofExpiresIn?: number;
  /** Phone only: "inbound" (default) or "outbound" (sms, whatsapp). */
  delivery?: string;
}

export type SubmitInput = Evidence;

/** A verification as the service answers it; `code` only on creation and only where the user sends it. */
export interface Answer {
  row: VerificationRow;
  code?: string;
}

export interface VerificationDeps {
  store: VerificationStore;
  proofs: Client<typeof ProofService>;
  config: Config;
  clock: Clock;
  hmacKey: string;
  logger: Logger;
  /** Absent when SMTP is not configured (then live email channels are unavailable). */
  mailer?: Mailer;
  /** Asked before every code the service sends (test scopes count too, in their own windows). */
  sendLimits: SendLimits;
  /** The phone senders of the configured providers (messagingSenders in @icv/platform), for outbound codes. */
  senders?: { whatsapp?: WhatsAppClient; sms?: TwilioClient };
}

/** What an inbound code did (CompleteInboundCode). */
export interface InboundOutcome {
  outcome: "verified" | "already_verified" | "wrong_sender" | "failed" | "expired" | "not_pending" | "unknown_code";
  verificationId?: string;
  attemptsRemaining?: number;
}

/** The error of a wrong answer: its code and what to tell the user. */
type Failure = ["invalid_code" | "invalid_signature", string];

const rpcScope = (s: Scope) => ({ tenantId: s.tenantId, environment: toEnvironment(s.env), requestId: s.requestId ?? "" });

export const identifierHash = (canonical: string) => createHash("sha256").update(canonical).digest("hex");

/** The verification use cases: plain functions over the store, the proof client, the clock. */
export class Verifications {
  private readonly delivery;

  constructor(private readonly d: VerificationDeps) {
    this.delivery = { config: d.config, logger: d.logger, mailer: d.mailer, ...d.senders };
  }

  async create(scope: Scope, input: CreateInput): Promise<Answer> {
    const { config, clock, hmacKey, store } = this.d;
    if (!(ASSET_TYPES as string[]).includes(input.type)) {
      throw new AppError("validation_error", `type must be one of ${ASSET_TYPES.join(", ")}`, {
        details: [{ field: "type", message: "unknown type", code: "invalid_enum_value" }],
      });
    }
    const type = input.type as AssetType;
    if (!CHANNELS_BY_TYPE[type].includes(input.channel)) {
      throw new AppError("invalid_channel_for_type", `channel ${input.channel || "(empty)"} is not valid for type ${type}; use one of ${CHANNELS_BY_TYPE[type].join(", ")}`);
    }
    const ident = normalizeIdentifier(type, input.channel, input.identifier);
    const delivery = deliveryOf(type, input.channel, input.delivery);
    if (input.externalUserId !== undefined && (input.externalUserId.length < 1 || input.externalUserId.length > 255)) {
      throw new AppError("validation_error", "external_user_id must be 1 to 255 characters");
    }
    if (input.clientMetadata && Buffer.byteLength(JSON.stringify(input.clientMetadata)) > MAX_METADATA_BYTES) {
      throw new AppError("validation_error", "client_metadata must be at most 4 KB of JSON");
    }
    const proofTtl = input.proofExpiresIn ?? DEFAULT_PROOF_TTL_S;
    if (!Number.isInteger(proofTtl) || proofTtl < 60 || proofTtl > 31_536_000) {
      throw new AppError("validation_error", "proof_expires_in must be an integer from 60 to 31536000 seconds");
    }
    if (scope.env === "live") {
      const missing = missingProvider(type, input.channel, config);
      if (missing.length) {
        throw new AppError("channel_unavailable", `channel ${input.channel} is not configured on this service (missing ${missing.join(", ")})`);
      }
    }
    const now = clock.now();
    const id = newId("verification", now.getTime());
    const ch = buildChallenge({ id, type, channel: input.channel, identifier: ident.value, env: scope.env, now, config, delivery: delivery ?? undefined });
    const v = { id, type, channel: input.channel, identifier: ident.value };
    // a code the service sends goes out before the row is stored: a failed send leaves nothing half-made;
    // test keys send nothing and get the message that would have gone out, stored with the row
    // before anything is sent or stored: a refused create leaves nothing behind
    if (ch.sendTo && ch.code) await this.d.sendLimits.reserve(scope, { channel: input.channel, identifier: ch.sendTo });
    const sent = ch.sendTo && ch.code ? await deliverCode(this.delivery, scope, { verificationId: id, ...codeTarget(v, ch) }, now) : undefined;
    const testMessage = scope.env === "test" ? (sent ?? testMessageOf(config, scope, v, ch, now)) : undefined;
    const row = await store.insert({
      id,
      tenant_id: scope.tenantId,
      environment: scope.env,
      type,
      channel: input.channel,
      identifier: ident.value,
      identifier_canonical: ident.canonical,
      code_hmac: ch.code ? codeHmac(hmacKey, id, ch.code) : null,
      challenge_expires_at: ch.expiresAt,
      instruction: ch.instruction,
      deep_link: ch.deepLink ?? null,
      challenge_message: ch.message ?? null,
      max_attempts: MAX_ATTEMPTS,
      client_metadata: input.clientMetadata ?? null,
      external_user_id: input.externalUserId ?? null,
      proof_expires_in: proofTtl,
      created_at: now,
      // live reverse-OTP codes arrive in provider messages without the verification id: index them
      code_lookup: delivery === "inbound" && scope.env === "live" && ch.code ? codeLookup(hmacKey, input.channel, ch.code) : null,
      origin: null,
      delivery,
    }, testMessage);
    this.d.logger.info({ request_id: scope.requestId, tenant_id: scope.tenantId, verification_id: id, type, channel: input.channel, env: scope.env }, "verification created");
    return { row, code: ch.showCode ? ch.code : undefined };
  }

  /** The verification as it stands now; a pending one whose challenge ran out is expired first. */
  async get(scope: Scope, id: string): Promise<VerificationRow> {
    const v = await this.d.store.get(scope, id);
    if (!v) throw new AppError("not_found", "verification not found");
    if (v.status === "pending" && v.challenge_expires_at <= this.d.clock.now()) {
      return (await this.d.store.expireOne(v, this.d.clock.now())) ?? (await this.get(scope, id));
    }
    return v;
  }

  /** A page of the tenant's verifications; due pending ones are expired first, so none shows a stale pending. */
  async list(scope: Scope, f: ListFilter) {
    await this.expireDue(scope);
    return this.d.store.list(scope, f);
  }

  async submit(scope: Scope, id: string, input: SubmitInput): Promise<VerificationRow> {
    const v = await this.pendingForAction(scope, id);
    // the channel checks the evidence (code, signature, bot token) or refuses it (OAuth, DNS/HTTP checks)
    const verdict = await channelOf(v.type as AssetType).complete(v, input, { hmacKey: this.d.hmacKey, config: this.d.config });
    if (!verdict.ok) return this.failAttempt(scope, v, verdict.failure);
    return this.complete(scope, v, verdict.method);
  }

  async testVerify(scope: Scope, id: string): Promise<VerificationRow> {
    if (scope.env !== "test") throw new AppError("test_mode_required", "test-verify needs a test key (pk_test_)");
    const v = await this.get(scope, id);
    if (v.status === "verified") return v; // a retry after a lost answer gets the same proof
    return this.complete(scope, await this.pendingForAction(scope, id, v), "test");
  }

  /**
   * Sends a new code for a pending email-channel verification (email, domain by email). Checks
   * in order: channel (resend_not_supported), status (invalid_state), the resend budget
   * (invalid_state once MAX_RESENDS were used), the 60 s gap (resend_too_soon with retry_after),
   * then the send limits (rate_limited, send-limits.ts). The new code and expiry are written by
   * one conditional UPDATE before the mail goes out; a refused or failed send puts the previous
   * code back, so it changes nothing. Test scopes send nothing, the rules still apply.
   */
  async resend(scope: Scope, id: string): Promise<{ row: VerificationRow; message: string; resendsRemaining: number }> {
    const { config, clock, hmacKey, store } = this.d;
    const v = await this.get(scope, id);
    if (v.channel !== "email" && v.delivery !== "outbound") {
      throw new AppError("resend_not_supported", `resend is only for codes the service sends (email, outbound phone); this is a ${v.type} verification on ${v.channel}`);
    }
    if (v.status !== "pending") throw new AppError("invalid_state", `only a pending verification can be resent (this one is ${v.status})`);
    const now = clock.now();
    this.checkResendAllowed(v, now);
    const type = v.type as AssetType;
    const ch = buildChallenge({ id: v.id, type, channel: v.channel, identifier: v.identifier, env: scope.env, now, config, delivery: v.delivery ?? undefined });
    const message = { verificationId: v.id, ...codeTarget(v, ch), resent: true };
    // test scopes: the would-be message is stored with the new code; live: the code is written first, then sent
    const testMessage = scope.env === "test" ? await deliverCode(this.delivery, scope, message, now) : undefined;
    const written = await store.writeResentCode(
      v,
      { codeHmac: codeHmac(hmacKey, v.id, ch.code!), expiresAt: ch.expiresAt },
      { maxResends: MAX_RESENDS, minGapMs: RESEND_GAP_MS },
      now,
      testMessage,
    );
    if (!written) {
      // it changed since it was read (a concurrent resend, a submit, expiry): answer why from the row as it is now
      const cur = await this.get(scope, id);
      if (cur.status !== "pending") throw new AppError("invalid_state", `only a pending verification can be resent (this one is ${cur.status})`);
      this.checkResendAllowed(cur, now);
      throw new AppError("invalid_state", "the verification changed meanwhile; try again");
    }
    // counted once the resend won its conditional write (concurrent losers send nothing and count nothing)
    await this.d.sendLimits.reserve(scope, { channel: v.channel, identifier: ch.sendTo! }).catch(async (e: unknown) => {
      await store.undoResentCode(v, written, testMessage?.id);
      throw e;
    });
    if (scope.env === "live") {
      try {
        await deliverCode(this.delivery, scope, message, now);
      } catch (e) {
        await store.undoResentCode(v, written);
        throw e;
      }
    }
    const remaining = MAX_RESENDS - written.resend_count;
    this.d.logger.info({ request_id: scope.requestId, tenant_id: scope.tenantId, verification_id: v.id, resend_count: written.resend_count, env: scope.env }, "verification code resent");
    const to = maskIdentifier(type === "phone" ? "phone" : "email", ch.sendTo!);
    const what = type === "phone" ? (v.channel === "whatsapp" ? "WhatsApp message" : "SMS") : "email";
    const text = scope.env === "live" ? `A new code was sent to ${to}; earlier codes no longer work.` : `Test mode: no ${what} was sent (a live key would send a new code to ${to}); earlier codes no longer work.`;
    return { row: written, message: text, resendsRemaining: remaining };
  }

  /** The resend budget and the gap since the last send, as of `now`; throws the matching error. */
  private checkResendAllowed(v: VerificationRow, now: Date): void {
    if (v.resend_count >= MAX_RESENDS) {
      throw new AppError("invalid_state", `the code was already resent ${MAX_RESENDS} times, the most a verification allows; create a new verification`, {
        extra: { resends_remaining: 0 },
      });
    }
    const lastSent = (v.code_sent_at ?? v.created_at).getTime();
    const waitMs = lastSent + RESEND_GAP_MS - now.getTime();
    if (waitMs > 0) {
      const retryAfter = Math.ceil(waitMs / 1000);
      throw new AppError("resend_too_soon", `a code was sent less than ${RESEND_GAP_MS / 1000} s ago; try again in ${retryAfter} s`, { extra: { retry_after: retryAfter } });
    }
  }

  /**
   * Reverse OTP: `code` arrived over `channel` from `sender`. Finds the live phone verification
   * holding the code (any tenant: the message names none) and settles it: the verification's own
   * number → verified, with its proof and events as test-verify makes them; another number → a
   * failed attempt (the last one fails the verification), once per `messageKey`. A repeat of a
   * settled message changes nothing: a verified one answers already_verified.
   */
  async completeInbound(channel: string, code: string, sender: string, messageKey?: string): Promise<InboundOutcome> {
    if (!/^[A-Za-z0-9]{6}$/.test(code) || !CHANNELS_BY_TYPE.phone.includes(channel)) return { outcome: "unknown_code" };
    const rows = await this.d.store.byCodeLookup(codeLookup(this.d.hmacKey, channel, code));
    if (!rows.length) return { outcome: "unknown_code" };
    const from = providerPhone(sender);
    const target = rows.find((r) => r.identifier_canonical === from) ?? rows[0];
    const scope: Scope = { tenantId: target.tenant_id, env: target.environment };
    // the row just read, expired first if its challenge ran out (get() would read it again)
    const now = this.d.clock.now();
    const v = target.status === "pending" && target.challenge_expires_at <= now ? ((await this.d.store.expireOne(target, now)) ?? (await this.get(scope, target.id))) : target;
    const own = v.identifier_canonical === from;
    const answer = (outcome: InboundOutcome["outcome"], attemptsRemaining?: number): InboundOutcome => {
      this.d.logger.info({ tenant_id: v.tenant_id, verification_id: v.id, channel, outcome }, "inbound code");
      return { outcome, verificationId: v.id, attemptsRemaining };
    };
    if (v.status === "expired") return answer("expired");
    if (v.status !== "pending") return answer(own && v.status === "verified" ? "already_verified" : "not_pending");
    if (own) {
      try {
        await this.complete(scope, v, "reverse_otp");
        return answer("verified");
      } catch (e) {
        if (e instanceof AppError && e.code === "challenge_expired") return answer("expired");
        throw e;
      }
    }
    // keyed by the provider message: handled again after a crash, it does not count twice
    const after = await this.d.store.recordFailedAttempt(scope, v.id, now, messageKey);
    if (!after || (after.status !== "pending" && after.status !== "failed")) return answer("not_pending");
    return after.status === "failed" ? answer("failed", 0) : answer("wrong_sender", after.max_attempts - after.attempts);
  }

  /**
   * A phone verification a session proved: made and completed at once (the same events as
   * test-verify). One per origin (the session id): a repeat answers the first one, and finishes
   * it if a crash stopped it between the two steps.
   */
  async recordSessionVerification(
    scope: Scope,
    input: { channel: string; phoneNumber: string; origin: string; proofExpiresIn: number; clientMetadata?: Record<string, unknown> },
  ): Promise<VerificationRow> {
    const { store, clock } = this.d;
    // a live session was answered by a message from the phone; a test session only by its test-verify
    const method: ProofMethod = scope.env === "live" ? "reverse_otp" : "test";
    const existing = await store.byOrigin(scope, input.origin);
    if (existing) return existing.status === "pending" ? this.complete(scope, existing, method) : existing;
    if (!["whatsapp", "telegram"].includes(input.channel)) throw new AppError("validation_error", "channel must be whatsapp or telegram");
    if (!Number.isInteger(input.proofExpiresIn) || input.proofExpiresIn < 60 || input.proofExpiresIn > 31_536_000) {
      throw new AppError("validation_error", "proof_expires_in must be an integer from 60 to 31536000 seconds");
    }
    const phone = providerPhone(input.phoneNumber);
    if (!phone) throw new AppError("invalid_identifier", "phone_number is not a possible phone number");
    const ident = { value: phone, canonical: phone };
    const now = clock.now();
    let row: VerificationRow;
    try {
      row = await store.insert({
        id: newId("verification", now.getTime()),
        tenant_id: scope.tenantId,
        environment: scope.env,
        type: "phone",
        channel: input.channel,
        identifier: ident.value,
        identifier_canonical: ident.canonical,
        code_hmac: null,
        challenge_expires_at: new Date(now.getTime() + TTL_MS.phone),
        instruction: `Confirmed by a message from this number to our ${input.channel === "telegram" ? "Telegram bot" : "WhatsApp number"}.`,
        deep_link: null,
        challenge_message: null,
        max_attempts: MAX_ATTEMPTS,
        client_metadata: input.clientMetadata ?? null,
        external_user_id: null,
        proof_expires_in: input.proofExpiresIn,
        created_at: now,
        code_lookup: null,
        origin: input.origin,
        delivery: "inbound",
      });
    } catch (e) {
      // a concurrent repeat made it first (unique origin)
      const made = await store.byOrigin(scope, input.origin);
      if (!made) throw e;
      return made.status === "pending" ? this.complete(scope, made, method) : made;
    }
    return this.complete(scope, row, method);
  }

  /** Keeps a test session's message for GET /test/messages (test scopes only). */
  async recordTestMessage(
    scope: Scope,
    m: { sessionId: string; channel: string; direction: "inbound" | "outbound"; from?: string; to: string; text: string },
  ): Promise<TestMessageRow> {
    if (scope.env !== "test") throw new AppError("test_mode_required", "test messages are only kept for test keys (pk_test_)");
    const now = this.d.clock.now();
    const row: TestMessageRow = {
      id: newId("testMessage", now.getTime()),
      tenant_id: scope.tenantId,
      environment: "test",
      verification_id: null,
      session_id: m.sessionId,
      channel: m.channel,
      direction: m.direction,
      from_address: m.from ?? null,
      to_address: m.to,
      subject: null,
      body: m.text,
      created_at: now,
    };
    await this.d.store.insertTestMessage(row);
    return row;
  }

  /**
   * Revokes the proof. The proof service owns the revoked state (validation sees it at once) and
   * writes its `proof.revoked` event in the same transaction; this service follows that event
   * (proof-revocations.ts), so a crash right after the proof call still ends with the verification
   * revoked. Marking it here too only makes this answer and an immediate read agree. Idempotent.
   */
  async revoke(scope: Scope, id: string, reason: string): Promise<VerificationRow> {
    const v = await this.get(scope, id);
    if (v.status === "revoked") return v;
    if (v.status !== "verified") throw new AppError("invalid_state", `only a verified verification can be revoked (this one is ${v.status})`);
    const r = await this.d.proofs.revokeProof({ scope: rpcScope(scope), proofId: id, reason });
    const revokedAt = toDate(r.revokedAt) ?? this.d.clock.now();
    return (await this.d.store.markRevoked(v, revokedAt, r.reason)) ?? (await this.get(scope, id));
  }

  /**
   * Proof check for a caller of `scope`'s environment: a test proof is valid only for a test scope
   * (the proof service answers test_proof otherwise). With an identifier, compares it by hash
   * after normalizing it like the asset.
   */
  async validate(scope: Scope, token: string, identifier?: string) {
    const r = await this.d.proofs.validateProof({ proofToken: token, scope: rpcScope(scope) });
    if (!r.valid || identifier === undefined) return r;
    let canonical: string | undefined;
    try {
      canonical = normalizeIdentifier(r.type as AssetType, r.channel, identifier).canonical;
    } catch {
      // a phone a session captured may be one the strict check refuses (providerPhone)
      canonical = r.type === "phone" ? providerPhone(identifier.replace(/[\s().\-/]/g, "")) : undefined;
    }
    const a = Buffer.from(canonical ? identifierHash(canonical) : "", "hex");
    const b = Buffer.from(r.identifierHash, "hex");
    if (a.length !== b.length || !timingSafeEqual(a, b)) {
      return { valid: false, reason: "identifier_mismatch", message: "the identifier does not match the proof" } as typeof r;
    }
    return r;
  }

  /** Signs the proof of a verification completed from an earlier proof (reuse.ts): `method: reused_proof`; idempotent by id. */
  async issueReusedProof(
    scope: Scope,
    v: { id: string; type: string; channel: string; identifierCanonical: string; externalUserId: string; ttl: number },
    at: Date,
  ): Promise<{ token: string; expiresAt: Date }> {
    const proof = await this.d.proofs.issueProof({
      scope: rpcScope(scope),
      proofId: v.id,
      type: v.type,
      channel: v.channel,
      identifierHash: identifierHash(v.identifierCanonical),
      externalUserId: v.externalUserId,
      verifiedAt: ts(at),
      expiresInSeconds: v.ttl,
      method: "reused_proof",
    });
    return { token: proof.token, expiresAt: toDate(proof.expiresAt)! };
  }

  /** Withdraws a proof that was issued for a verification that was then not stored. */
  async withdrawProof(scope: Scope, id: string): Promise<void> {
    await this.d.proofs.revokeProof({ scope: rpcScope(scope), proofId: id, reason: "other" });
  }

  /** Sweeps stale pending verifications (of one scope, or all) to expired; returns how many moved. */
  async expireDue(scope?: Scope): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.d.store.expireDue(this.d.clock.now(), 500, scope);
      total += n;
      if (n < 500) return total;
    }
  }

  /** Loads a verification that must be pending for a user action; expired and other states answer their error. */
  private async pendingForAction(scope: Scope, id: string, loaded?: VerificationRow): Promise<VerificationRow> {
    const v = loaded ?? (await this.get(scope, id));
    if (v.status === "expired") throw new AppError("challenge_expired", "the challenge has expired; create a new verification");
    if (v.status !== "pending") throw new AppError("invalid_state", `verification is ${v.status}`);
    return v;
  }

  private async failAttempt(scope: Scope, v: VerificationRow, [code, message]: Failure): Promise<never> {
    const after = await this.d.store.recordFailedAttempt(scope, v.id, this.d.clock.now());
    if (!after) {
      await this.pendingForAction(scope, v.id); // it moved on meanwhile: answer its new state
      throw new AppError("invalid_state", "verification is no longer pending");
    }
    if (after.status === "failed") {
      throw new AppError("max_attempts_exceeded", "too many wrong attempts; the verification has failed", { extra: { attempts_remaining: 0 } });
    }
    const remaining = after.max_attempts - after.attempts;
    throw new AppError(code, message, {
      extra: { attempts_remaining: remaining },
    });
  }

  /**
   * pending → verified, shown by `method` (the proof's claim and the row's). The proof is issued
   * first (idempotent by verification id), then the row moves with its events in one
   * transaction; a crash between the two is healed by a retry, which gets the same proof.
   */
  private async complete(scope: Scope, v: VerificationRow, method: ProofMethod): Promise<VerificationRow> {
    const now = this.d.clock.now();
    const proof = await this.d.proofs.issueProof({
      scope: rpcScope(scope),
      proofId: v.id,
      type: v.type,
      channel: v.channel,
      identifierHash: identifierHash(v.identifier_canonical),
      externalUserId: v.external_user_id ?? undefined,
      verifiedAt: ts(now),
      expiresInSeconds: v.proof_expires_in,
      method,
    });
    const done = await this.d.store.markVerified(v, { token: proof.token, expiresAt: toDate(proof.expiresAt)!, method }, now);
    if (done) {
      this.d.logger.info({ request_id: scope.requestId, tenant_id: scope.tenantId, verification_id: v.id, kid: proof.kid }, "verification verified");
      return done;
    }
    const cur = await this.get(scope, v.id);
    if (cur.status === "verified") return cur;
    // it left pending (expired or failed) while the proof was being signed: withdraw that proof
    await this.d.proofs.revokeProof({ scope: rpcScope(scope), proofId: v.id, reason: "other" });
    throw new AppError(cur.status === "expired" ? "challenge_expired" : "invalid_state", `verification is ${cur.status as Status}`);
  }
}
