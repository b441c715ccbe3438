/** Resend: a new code for a verification whose code the service sends (email, domain by email, outbound phone). */
import { AppError, type Scope } from "@icv/platform";
import { codeHmac } from "../challenge.ts";
import type { PhoneDelivery } from "../channels/channel.ts";
import { channelFor } from "../channels/registry.ts";
import { codeTarget, deliverCode } from "../delivery.ts";
import { codeWords } from "../messages.ts";
import type { VerificationRow } from "../store/index.ts";
import { MAX_RESENDS, RESEND_GAP_MS, type UseCaseHost } from "./deps.ts";

/**
 * Sends a new code for a pending email-channel verification (email, domain by email). Checks
 * in order: channel (resend_not_supported), status (invalid_state), the resend budget
 * (invalid_state once MAX_RESENDS were used), the 60 s gap (resend_too_soon with retry_after),
 * then the send limits (rate_limited, send-limits.ts). The new code and expiry are written by
 * one conditional UPDATE before the mail goes out; a refused or failed send puts the previous
 * code back, so it changes nothing. Test scopes send nothing, the rules still apply.
 */
export async function resendCode(vs: UseCaseHost, scope: Scope, id: string): Promise<{ row: VerificationRow; message: string; resendsRemaining: number }> {
  const { config, clock, hmacKey, store } = vs.d;
  const v = await vs.get(scope, id);
  const channel = channelFor(v.type, v.channel);
  if (!channel.sends?.code(v.delivery)) {
    throw new AppError(
      "resend_not_supported",
      `resend is only for codes the service sends (email, outbound phone); this is a ${v.type} verification on ${v.channel}`,
    );
  }
  if (v.status !== "pending") throw new AppError("invalid_state", `only a pending verification can be resent (this one is ${v.status})`);
  const now = clock.now();
  checkResendAllowed(v, now);
  // a domain by email goes to the mailbox chosen at create
  const emailPrefix = (await store.checks.get(scope, v.id))?.email_prefix ?? undefined;
  const options = { delivery: (v.delivery ?? undefined) as PhoneDelivery | undefined, email_prefix: emailPrefix };
  const ch = channel.challenge({ id: v.id, identifier: v.identifier, env: scope.env, now, config, options });
  const target = codeTarget(v, ch);
  const message = { verificationId: v.id, ...target, resent: true, words: await codeWords(vs.d.projects, scope, v, target) };
  // test scopes: the would-be message is stored with the new code; live: the code is written first, then sent
  const testMessage = scope.env === "test" ? await deliverCode(vs.delivery, scope, message, now) : undefined;
  const written = await store.writeResentCode(
    v,
    { codeHmac: codeHmac(hmacKey, v.id, ch.code!), expiresAt: ch.expiresAt },
    { maxResends: MAX_RESENDS, minGapMs: RESEND_GAP_MS },
    now,
    testMessage,
  );
  if (!written) {
    // it changed since it was read (a concurrent resend, a submit, expiry): answer why from the row as it is now
    const cur = await vs.get(scope, id);
    if (cur.status !== "pending") throw new AppError("invalid_state", `only a pending verification can be resent (this one is ${cur.status})`);
    checkResendAllowed(cur, now);
    throw new AppError("invalid_state", "the verification changed meanwhile; try again");
  }
  // counted once the resend won its conditional write (concurrent losers send nothing and count nothing)
  await vs.d.sendLimits.reserve(scope, { channel: v.channel, identifier: ch.sendTo! }).catch(async (e: unknown) => {
    await store.undoResentCode(v, written, testMessage?.id);
    throw e;
  });
  if (scope.env === "live") {
    try {
      await deliverCode(vs.delivery, scope, message, now);
    } catch (e) {
      await store.undoResentCode(v, written);
      throw e;
    }
  }
  const remaining = MAX_RESENDS - written.resend_count;
  vs.d.logger.info(
    { request_id: scope.requestId, tenant_id: scope.tenantId, verification_id: v.id, resend_count: written.resend_count, env: scope.env },
    "verification code resent",
  );
  const { to, what } = channel.sends.notice(ch.sendTo!);
  const text =
    scope.env === "live"
      ? `A new code was sent to ${to}; earlier codes no longer work.`
      : `Test mode: no ${what} was sent (a live key would send a new code to ${to}); earlier codes no longer work.`;
  return { row: written, message: text, resendsRemaining: remaining };
}

/** The resend budget and the gap since the last send, as of `now`; throws the matching error. */
function checkResendAllowed(v: VerificationRow, now: Date): void {
  if (v.resend_count >= MAX_RESENDS) {
    throw new AppError("invalid_state", `the code was already resent ${MAX_RESENDS} times, the most a verification allows; create a new verification`, {
      extra: { resends_remaining: 0 },
    });
  }
  const lastSent = (v.code_sent_at ?? v.created_at).getTime();
  const waitMs = lastSent + RESEND_GAP_MS - now.getTime();
  if (waitMs > 0) {
    const retryAfter = Math.ceil(waitMs / 1000);
    throw new AppError("resend_too_soon", `a code was sent less than ${RESEND_GAP_MS / 1000} s ago; try again in ${retryAfter} s`, {
      extra: { retry_after: retryAfter },
    });
  }
}
