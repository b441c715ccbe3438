/** Phone evidence from the providers: an inbound code (reverse OTP) and a session's proved phone. */
import { AppError, CHANNELS_BY_TYPE, newId, providerPhone, type ProofMethod, type Scope } from "@icv/platform";
import { codeLookup } from "../challenge.ts";
import { channelFor } from "../channels/registry.ts";
import type { VerificationRow } from "../store/index.ts";
import { projectMessage } from "../projects/index.ts";
import { MAX_ATTEMPTS, type InboundOutcome, type UseCaseHost } from "./deps.ts";

/**
 * Reverse OTP: `code` arrived over `channel` from `sender`. Finds the live phone verification
 * holding the code (any tenant: the message names none) and settles it: the verification's own
 * number → verified, with its proof and events as test-verify makes them; another number → a
 * failed attempt (the last one fails the verification), once per `messageKey`. A repeat of a
 * settled message changes nothing: a verified one answers already_verified.
 */
export async function completeInbound(vs: UseCaseHost, channel: string, code: string, sender: string, messageKey?: string): Promise<InboundOutcome> {
  if (!/^[A-Za-z0-9]{6}$/.test(code) || !(CHANNELS_BY_TYPE.phone as readonly string[]).includes(channel)) return { outcome: "unknown_code" };
  const rows = await vs.d.store.byCodeLookup(codeLookup(vs.d.hmacKey, channel, code));
  if (!rows.length) return { outcome: "unknown_code" };
  const from = providerPhone(sender);
  const target = rows.find((r) => r.identifier_canonical === from) ?? rows[0];
  const scope: Scope = { tenantId: target.tenant_id, env: target.environment };
  // the row just read, expired first if its challenge ran out (get() would read it again)
  const now = vs.d.clock.now();
  const v =
    target.status === "pending" && target.challenge_expires_at <= now
      ? ((await vs.d.store.expireOne(target, now)) ?? (await vs.get(scope, target.id)))
      : target;
  const own = v.identifier_canonical === from;
  const answer = (outcome: InboundOutcome["outcome"], attemptsRemaining?: number): InboundOutcome => {
    vs.d.logger.info({ tenant_id: v.tenant_id, verification_id: v.id, channel, outcome }, "inbound code");
    return { outcome, verificationId: v.id, attemptsRemaining };
  };
  // the project's reply for the outcome (a type), when it has an active template on this channel;
  // else its business name, for the built-in reply
  const withReply = async (o: InboundOutcome, type?: string): Promise<InboundOutcome> => {
    const m = await projectMessage(vs.d.projects, scope, v.project_id ?? null, channel, type ?? "verification_success", {
      user_identifier: channelFor(v.type, v.channel).mask(v.identifier),
    });
    if (type && m.rendered) return { ...o, reply: m.rendered.text };
    return m.businessName ? { ...o, businessName: m.businessName } : o;
  };
  if (v.status === "expired") return withReply(answer("expired"), "verification_expired");
  if (v.status !== "pending") return withReply(answer(own && v.status === "verified" ? "already_verified" : "not_pending"));
  if (own) {
    try {
      await vs.complete(scope, v, "reverse_otp");
      return withReply(answer("verified"), "verification_success");
    } catch (e) {
      if (e instanceof AppError && e.code === "challenge_expired") return withReply(answer("expired"), "verification_expired");
      throw e;
    }
  }
  // keyed by the provider message: handled again after a crash, it does not count twice
  const after = await vs.d.store.recordFailedAttempt(scope, v.id, now, messageKey);
  if (!after || (after.status !== "pending" && after.status !== "failed")) return withReply(answer("not_pending"));
  return withReply(after.status === "failed" ? answer("failed", 0) : answer("wrong_sender", after.max_attempts - after.attempts));
}

/**
 * A phone verification a session proved: made and completed at once (the same events as
 * test-verify). One per origin (the session id): a repeat answers the first one, and finishes
 * it if a crash stopped it between the two steps.
 */
export async function recordSessionVerification(
  vs: UseCaseHost,
  scope: Scope,
  input: {
    channel: string;
    phoneNumber: string;
    origin: string;
    proofExpiresIn: number;
    clientMetadata?: Record<string, unknown>;
    projectId?: string;
  },
): Promise<VerificationRow> {
  const { store, clock } = vs.d;
  // a live session was answered by a message from the phone; a test session only by its test-verify
  const method: ProofMethod = scope.env === "live" ? "reverse_otp" : "test";
  const existing = await store.byOrigin(scope, input.origin);
  if (existing) return existing.status === "pending" ? vs.complete(scope, existing, method) : existing;
  // a channel sessions use: a phone channel (validation_error for any other)
  const phoneChannel = channelFor("phone", input.channel);
  const instruction = phoneChannel.phone?.sessionInstruction ?? "";
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
      challenge_expires_at: new Date(now.getTime() + phoneChannel.ttlMs),
      instruction,
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
      // the session's project (checked when the session was made)
      project_id: input.projectId ?? null,
    });
  } catch (e) {
    // a concurrent repeat made it first (unique origin)
    const made = await store.byOrigin(scope, input.origin);
    if (!made) throw e;
    return made.status === "pending" ? vs.complete(scope, made, method) : made;
  }
  return vs.complete(scope, row, method);
}
