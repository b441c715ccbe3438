// Limits on the codes the service sends to someone (docs/send-limits.md): per destination, per
// tenant, and where SMS may go at all. Every outbound code send asks reserve() first, one line
// before the send; a refusal throws, and nothing is sent.
import { createHmac } from "node:crypto";
import { parsePhoneNumberFromString } from "libphonenumber-js/max";
import { AppError, type Config, type Logger, type RateLimiter, type Scope } from "@icv/platform";

/** At most this many codes go to one address or number per window, across verifications and tenants. */
export const SENDS_PER_IDENTIFIER = 5;
export const IDENTIFIER_WINDOW_MS = 10 * 60_000;
export const TENANT_WINDOW_MS = 60 * 60_000;

/** Number types (libphonenumber) an SMS code never goes to: the sender pays extra, or the user cannot receive it as theirs. */
export const REFUSED_SMS_TYPES: ReadonlyMap<string, string> = new Map([
  ["PREMIUM_RATE", "a premium-rate number"],
  ["SHARED_COST", "a shared-cost number"],
  // universal access numbers: one company number routed to many lines, never a person's phone
  ["UAN", "a universal access (company) number"],
]);

export interface Send {
  /** email, sms, whatsapp (the channel the code goes out on; names the destination in messages). */
  channel: string;
  /** The canonical destination: the email address (lower case) or the E.164 number the code goes to. */
  identifier: string;
}

export interface SendLimitDeps {
  limiter: RateLimiter;
  /** Keys the destination's hash (the challenge HMAC key): no address is ever held in clear by the limiter. */
  keySecret: string;
  /** Sends per tenant and environment per hour (SEND_BUDGET_PER_HOUR). */
  budgetPerHour: number;
  /** Refusals are logged (tenant, channel, which limit; never the destination). */
  logger?: Logger;
}

/**
 * The mailbox or phone a send lands in, as the limits count it: an email's sub-address
 * (`+tag`) is dropped, and Gmail's dots and googlemail.com too, so `j.doe+1@gmail.com` and
 * `jdoe+2@googlemail.com` share one window (the identifier itself keeps them, DECISIONS.md).
 */
export function mailboxOf(identifier: string): string {
  const at = identifier.lastIndexOf("@");
  if (at === -1) return identifier;
  let local = identifier.slice(0, at).split("+")[0] || identifier.slice(0, at);
  let domain = identifier.slice(at + 1).toLowerCase();
  if (domain === "gmail.com" || domain === "googlemail.com") [local, domain] = [local.replaceAll(".", ""), "gmail.com"];
  return `${local.toLowerCase()}@${domain}`;
}

const minutes = (s: number) => (s < 60 ? `${s} s` : `${Math.ceil(s / 60)} min`);

export class SendLimits {
  constructor(private readonly d: SendLimitDeps) {}

  /**
   * Counts one send to `send.identifier` for `scope`, or throws rate_limited (retry_after in
   * seconds) and counts nothing. Live sends share one window per destination across all tenants
   * (one victim cannot be pumped through many tenants); test sends (nothing goes out) count in
   * the tenant's own test window, so integrators meet the same 429 in test mode.
   */
  async reserve(scope: Scope, send: Send): Promise<void> {
    const { limiter } = this.d;
    const who = createHmac("sha256", this.d.keySecret).update(mailboxOf(send.identifier)).digest("base64url");
    const destKey = scope.env === "live" ? `send:to:${who}` : `send:to:test:${scope.tenantId}:${who}`;
    const dest = await limiter.consume(destKey, SENDS_PER_IDENTIFIER, IDENTIFIER_WINDOW_MS);
    const refused = (limit: string) =>
      this.d.logger?.warn(
        { request_id: scope.requestId, tenant_id: scope.tenantId, env: scope.env, channel: send.channel, limit },
        "send refused by a send limit",
      );
    if (!dest.allowed) {
      refused("destination");
      const what = send.channel === "email" ? "email address" : "phone number";
      throw new AppError(
        "rate_limited",
        `too many codes were sent to this ${what} recently (at most ${SENDS_PER_IDENTIFIER} in ${IDENTIFIER_WINDOW_MS / 60_000} minutes); try again in ${minutes(dest.retryAfter)}`,
        { extra: { retry_after: dest.retryAfter } },
      );
    }
    const budget = await limiter.consume(`send:tenant:${scope.tenantId}:${scope.env}`, this.d.budgetPerHour, TENANT_WINDOW_MS);
    if (!budget.allowed) {
      // nothing is sent: the destination's count is given back
      await limiter.refund(destKey, IDENTIFIER_WINDOW_MS);
      refused("tenant_budget");
      throw new AppError(
        "rate_limited",
        `this account's budget of ${this.d.budgetPerHour} codes sent per hour is used up; try again in ${minutes(budget.retryAfter)}`,
        { extra: { retry_after: budget.retryAfter } },
      );
    }
  }
}

/**
 * Whether an SMS code may go to this E.164 number: a country the operator allows
 * (SMS_ALLOWED_COUNTRIES, every country when unset), never a premium-rate, shared-cost or
 * universal-access number (libphonenumber's full metadata), never a non-geographic number
 * (satellite and international networks: no country to allow, a toll-fraud favourite).
 * Throws invalid_identifier, for live and test keys alike.
 */
export function assertSmsDestination(e164: string, config: Pick<Config, "SMS_ALLOWED_COUNTRIES">): void {
  const refuse = (why: string) =>
    new AppError("invalid_identifier", `codes cannot be sent by SMS to this number: ${why}`, {
      details: [{ field: "identifier", message: why, code: "sms_destination_refused" }],
    });
  const p = parsePhoneNumberFromString(e164);
  if (!p) throw refuse("it is not a phone number");
  const country = p.country;
  if (!country) throw refuse(`+${p.countryCallingCode} numbers belong to no country`);
  const allowed = config.SMS_ALLOWED_COUNTRIES;
  if (allowed && !allowed.includes(country)) throw refuse(`SMS to ${country} numbers is not enabled on this service`);
  const type = p.getType();
  const refused = type && REFUSED_SMS_TYPES.get(type);
  if (refused) throw refuse(`it is ${refused}`);
}
