/**
 * OAuth 2.0 sign-in of a social or coinbase verification (DECISIONS.md, "Social and exchange
 * accounts"). start: the link's single-use secret is spent, a state is stored (its hash only)
 * and the user is sent to the provider with a PKCE challenge. callback: the state is taken
 * (single use), the code traded and the signed-in account read; its handle is compared with the
 * verification's identifier: verified (method oauth, subject_hash in the proof) or a failed
 * attempt. Both answer an outcome the gateway shows as a small page.
 */
import { createHash, createHmac, randomBytes } from "node:crypto";
import { AppError, type Clock, type Config, type Logger, type Scope } from "@icv/platform";
import { codeHmac, codeMatches } from "../challenge.ts";
import { channelFor } from "../channels/registry.ts";
import type { OAuthStore, VerificationRow } from "../store/index.ts";
import type { Verifications } from "../verifications/index.ts";
import { authorizationUrl, ProviderError, signedInAccount, type Flow } from "./client.ts";
import { newLinkSecret, parseLinkToken, startLink } from "../channels/shared/sign-in-link.ts";
import { isOAuthProvider, providerSettings } from "./providers.ts";

export type OAuthOutcomeKind =
  | "redirect" // start: go to the provider
  | "test_mode" // start of a test verification: nothing to sign in to
  | "verified"
  | "mismatch" // another account signed in: a failed attempt
  | "failed" // no attempts left
  | "expired"
  | "already_verified"
  | "invalid_link" // unknown, spent or tampered link or state
  | "denied" // the user cancelled at the provider
  | "provider_error"
  | "unavailable"; // the provider is not configured

export interface OAuthOutcome {
  outcome: OAuthOutcomeKind;
  channel: string;
  /** The verification's identifier, masked (what the page may show). */
  identifier?: string;
  attemptsRemaining?: number;
  authorizationUrl?: string;
  /** A fresh sign-in link, when the verification is still open after this try. */
  retryUrl?: string;
  /** The request's redirect_url (settled) or hosted page, when a request drives the verification. */
  returnUrl?: string;
}

export interface OAuthDeps {
  store: OAuthStore;
  verifications: Verifications;
  config: Config;
  clock: Clock;
  hmacKey: string;
  logger: Logger;
  returnUrl(scope: Scope, verificationId: string): Promise<string | undefined>;
}

const STATE_TTL_MS = 10 * 60_000;
const MAX_PARAM = 2048;

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

export class OAuthSignIn {
  constructor(private readonly d: OAuthDeps) {}

  /** The PKCE verifier and OIDC nonce are derived from the state (never stored); only we can compute them. */
  private flow(channel: string, state: string): Flow {
    const derive = (what: string) => createHmac("sha256", this.d.hmacKey).update(`icv-oauth-${what}:${state}`).digest("base64url");
    return {
      redirectUri: `${this.d.config.publicBaseUrl}/oauth/${channel}/callback`,
      state,
      verifier: derive("pkce"),
      nonce: derive("nonce"),
    };
  }

  async start(channel: string, token: string): Promise<OAuthOutcome> {
    const link = token.length <= MAX_PARAM ? parseLinkToken(token) : undefined;
    const found = link && isOAuthProvider(channel) ? await this.d.store.verificationById(link.verificationId) : undefined;
    if (
      !link ||
      !found ||
      found.channel !== channel ||
      channelFor(found.type, channel).method !== "oauth" ||
      !codeMatches(this.d.hmacKey, found.id, link.secret, found.code_hmac ?? "")
    ) {
      return { outcome: "invalid_link", channel };
    }
    const scope: Scope = { tenantId: found.tenant_id, env: found.environment };
    const v = await this.d.verifications.get(scope, found.id);
    const settled = await this.settled(scope, v);
    if (settled) return settled;
    if (scope.env === "test") return { ...this.base(v), outcome: "test_mode", returnUrl: await this.d.returnUrl(scope, v.id) };
    const provider = providerSettings(this.d.config, channel as Parameters<typeof providerSettings>[1]);
    if (!provider) return { outcome: "unavailable", channel };
    if (!(await this.d.store.spendLink(scope, v.id, found.code_hmac!))) return { outcome: "invalid_link", channel };
    const state = randomBytes(32).toString("base64url");
    const now = this.d.clock.now();
    await this.d.store.insertState({
      state_hash: sha256(state),
      tenant_id: scope.tenantId,
      environment: scope.env,
      verification_id: v.id,
      channel,
      created_at: now,
      expires_at: new Date(Math.min(now.getTime() + STATE_TTL_MS, v.challenge_expires_at.getTime())),
    });
    this.d.logger.info({ tenant_id: scope.tenantId, verification_id: v.id, channel }, "oauth sign-in started");
    return { outcome: "redirect", channel, authorizationUrl: await authorizationUrl(provider, this.flow(channel, state)) };
  }

  async callback(channel: string, params: URLSearchParams): Promise<OAuthOutcome> {
    const state = params.get("state") ?? "";
    if (!state || state.length > MAX_PARAM || !isOAuthProvider(channel)) return { outcome: "invalid_link", channel };
    const s = await this.d.store.takeState(sha256(state), channel, this.d.clock.now());
    if (!s) return { outcome: "invalid_link", channel };
    const scope: Scope = { tenantId: s.tenant_id, env: s.environment };
    const v = await this.d.verifications.get(scope, s.verification_id);
    const settled = await this.settled(scope, v);
    if (settled) return settled;
    const log = { tenant_id: scope.tenantId, verification_id: v.id, channel };
    // where the page leads back to, computed once the outcome is known (the request may settle with it)
    const end = async (o: Omit<OAuthOutcome, "channel">): Promise<OAuthOutcome> => ({
      ...this.base(v),
      ...o,
      returnUrl: await this.d.returnUrl(scope, v.id),
    });
    if (params.has("error")) {
      this.d.logger.info({ ...log, error: (params.get("error") ?? "").slice(0, 64) }, "oauth sign-in refused at the provider");
      return end({ outcome: "denied", retryUrl: await this.retry(scope, v) });
    }
    const provider = providerSettings(this.d.config, channel);
    if (!provider) return { outcome: "unavailable", channel };
    let account;
    try {
      account = await signedInAccount(provider, this.flow(channel, state), params);
    } catch (e) {
      if (!(e instanceof ProviderError)) throw e;
      this.d.logger.warn({ ...log, reason: e.reason }, "oauth sign-in failed at the provider");
      return end({ outcome: "provider_error", retryUrl: await this.retry(scope, v) });
    }
    if (account && this.matches(v, account.handles)) {
      try {
        await this.d.verifications.complete(scope, v, "oauth", sha256(`${channel}:${account.subject}`));
      } catch (e) {
        if (e instanceof AppError && (e.code === "challenge_expired" || e.code === "invalid_state"))
          return (await this.settled(scope, await this.d.verifications.get(scope, v.id))) ?? end({ outcome: "expired" });
        throw e;
      }
      return end({ outcome: "verified" });
    }
    // another account signed in: a failed attempt, counted like a wrong code
    this.d.logger.info(log, "oauth sign-in: another account signed in");
    try {
      await this.d.verifications.failAttempt(scope, v, ["invalid_code", "identifier_mismatch"]);
    } catch (e) {
      if (!(e instanceof AppError)) throw e;
      if (e.code !== "invalid_code") return end({ outcome: "failed", attemptsRemaining: 0 });
      return end({
        outcome: "mismatch",
        attemptsRemaining: Number(e.extra?.attempts_remaining ?? 0),
        retryUrl: await this.retry(scope, v),
      });
    }
    return end({ outcome: "mismatch" });
  }

  /** Sweeps states of abandoned sign-ins. */
  pruneStates(): Promise<number> {
    return this.d.store.pruneStates(this.d.clock.now());
  }

  /** Any handle the provider names, normalized as the channel normalizes identifiers, equal to the verification's. */
  private matches(v: VerificationRow, handles: string[]): boolean {
    return handles.some((h) => {
      try {
        return channelFor(v.type, v.channel).normalize(h).canonical === v.identifier_canonical;
      } catch {
        return false;
      }
    });
  }

  private base(v: VerificationRow): { channel: string; identifier: string } {
    return { channel: v.channel, identifier: channelFor(v.type, v.channel).mask(v.identifier) };
  }

  /** The outcome of a verification that is no longer pending, or undefined while it is. */
  private async settled(scope: Scope, v: VerificationRow): Promise<OAuthOutcome | undefined> {
    if (v.status === "pending") return undefined;
    const base = { ...this.base(v), returnUrl: await this.d.returnUrl(scope, v.id) };
    if (v.status === "expired") return { ...base, outcome: "expired" };
    if (v.status === "failed") return { ...base, outcome: "failed", attemptsRemaining: 0 };
    return { ...base, outcome: "already_verified" };
  }

  /** A fresh sign-in link for another try while the verification is pending (the spent one never works again). */
  private async retry(scope: Scope, v: VerificationRow): Promise<string | undefined> {
    const secret = newLinkSecret();
    const link = startLink(this.d.config.publicBaseUrl, v.channel, v.id, secret);
    return (await this.d.store.rearmLink(scope, v.id, codeHmac(this.d.hmacKey, v.id, secret), link)) ? link : undefined;
  }
}
