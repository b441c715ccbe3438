import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type RegistrationResponseJSON,
} from "@simplewebauthn/server";
import { AppError, type Clock, type Config } from "@icv/platform";
import { ROLES, sha256, type ConsoleStore, type ConsoleUser, type Role } from "./store.ts";

export const INVITE_TTL_MS = 24 * 3600_000;
export const SESSION_IDLE_MS = 12 * 3600_000;
export const SESSION_ABSOLUTE_MS = 7 * 24 * 3600_000;
const CHALLENGE_TTL_MS = 5 * 60_000;
const EMAIL_RE = /^[^\s@]{1,64}@[^\s@]{1,189}\.[^\s@]{1,60}$/;

/** The relying party: its id (the host of PUBLIC_BASE_URL) and the origin the browser must report. */
export function relyingParty(config: Config): { id: string; origin: string; secure: boolean } {
  const u = new URL(config.publicBaseUrl);
  return { id: u.hostname, origin: u.origin, secure: u.protocol === "https:" };
}

const token = () => randomBytes(32).toString("base64url");

/** A new invite (single use, 24 h) for a person of a tenant; the link is shown once. */
export async function invite(
  store: ConsoleStore,
  config: Config,
  clock: Clock,
  i: { tenantId: string; email: string; role: string; by?: string },
): Promise<{ inviteUrl: string; user: ConsoleUser; expiresAt: Date }> {
  const email = i.email.trim();
  if (!EMAIL_RE.test(email) || email.length > 254) throw new AppError("validation_error", "email is not an email address");
  if (!ROLES.includes(i.role as Role)) throw new AppError("validation_error", `role must be one of ${ROLES.join(", ")}`);
  const t = token();
  const at = clock.now();
  const expiresAt = new Date(at.getTime() + INVITE_TTL_MS);
  const user = await store.invite({ tenantId: i.tenantId, email, role: i.role as Role, tokenHash: sha256(t), by: i.by, at, expiresAt });
  // the token travels in the fragment: never sent to a server, never in an access log
  return { inviteUrl: `${config.publicBaseUrl}/console/invite#${t}`, user, expiresAt };
}

/** Passkey registration (from an invite) and sign-in, and the sessions they open. */
export class Passkeys {
  private readonly rp: { id: string; origin: string; secure: boolean };
  constructor(
    private readonly store: ConsoleStore,
    config: Config,
    private readonly clock: Clock,
  ) {
    this.rp = relyingParty(config);
  }

  get secure(): boolean {
    return this.rp.secure;
  }

  async registrationOptions(inviteToken: string) {
    const inviteHash = sha256(inviteToken);
    const user = await this.store.openInvite(inviteHash, this.clock.now());
    if (!user) throw new AppError("not_found", "invite not found, used or expired");
    const options = await generateRegistrationOptions({
      rpName: "ICV console",
      rpID: this.rp.id,
      userName: user.email,
      userID: new TextEncoder().encode(user.id),
      attestationType: "none",
      authenticatorSelection: { residentKey: "required", userVerification: "preferred" },
    });
    await this.store.saveChallenge({ challenge: options.challenge, purpose: "register", inviteHash, expiresAt: this.expiry() }, this.clock.now());
    return { options, user };
  }

  /** Checks the new passkey against the invite's challenge and uses the invite; answers its user. */
  async register(inviteToken: string, response: RegistrationResponseJSON): Promise<ConsoleUser> {
    const inviteHash = sha256(inviteToken);
    const now = this.clock.now();
    const r = await verifyRegistrationResponse({
      response,
      expectedChallenge: (c) => this.store.takeChallenge(c, "register", now, inviteHash),
      expectedOrigin: this.rp.origin,
      expectedRPID: this.rp.id,
      requireUserVerification: false,
    }).catch(() => undefined);
    if (!r?.verified || !r.registrationInfo) throw new AppError("validation_error", "the passkey could not be verified");
    const c = r.registrationInfo.credential;
    const user = await this.store.acceptInvite(inviteHash, now, {
      id: c.id,
      public_key: c.publicKey,
      counter: c.counter,
      transports: c.transports ?? [],
    });
    if (!user) throw new AppError("not_found", "invite not found, used or expired");
    return user;
  }

  async signInOptions() {
    // discoverable credentials: the authenticator offers this site's passkeys, no user named first
    const options = await generateAuthenticationOptions({ rpID: this.rp.id, userVerification: "preferred" });
    await this.store.saveChallenge({ challenge: options.challenge, purpose: "sign_in", expiresAt: this.expiry() }, this.clock.now());
    return options;
  }

  /** The passkey's user named by an assertion (before it is checked: for per-user limits). */
  async claimedUser(response: AuthenticationResponseJSON): Promise<string | undefined> {
    if (typeof response?.id !== "string" || response.id.length > 1024) return undefined;
    return (await this.store.passkey(response.id))?.user_id;
  }

  /** The user whose passkey an assertion names (whether or not it verifies): for the audit log of failures. */
  async passkeyOwner(response: AuthenticationResponseJSON): Promise<ConsoleUser | undefined> {
    const key = typeof response?.id === "string" ? await this.store.passkey(response.id) : undefined;
    return key ? this.store.user(key.tenant_id, key.user_id) : undefined;
  }

  /** Checks an assertion; answers the signed-in user, or throws unauthorized. */
  async signIn(response: AuthenticationResponseJSON): Promise<ConsoleUser> {
    const now = this.clock.now();
    const key = typeof response?.id === "string" ? await this.store.passkey(response.id) : undefined;
    const refused = new AppError("unauthorized", "sign-in failed: unknown or invalid passkey");
    if (!key) throw refused;
    const r = await verifyAuthenticationResponse({
      response,
      expectedChallenge: (c) => this.store.takeChallenge(c, "sign_in", now),
      expectedOrigin: this.rp.origin,
      expectedRPID: this.rp.id,
      requireUserVerification: false,
      credential: { id: key.id, publicKey: new Uint8Array(key.public_key), counter: Number(key.counter), transports: key.transports as never },
    }).catch(() => undefined);
    if (!r?.verified) throw refused;
    await this.store.usedPasskey(key.id, r.authenticationInfo.newCounter, now);
    const user = await this.store.user(key.tenant_id, key.user_id);
    if (!user || user.revoked_at) throw refused;
    return user;
  }

  /** A new session of the user: the cookie's value (shown to this browser only) and its CSRF token. */
  async openSession(user: ConsoleUser, from: { ip?: string; userAgent?: string }): Promise<{ id: string; csrf: string }> {
    const id = token();
    await this.store.startSession({ idHash: sha256(id), user, at: this.clock.now(), ...from });
    return { id, csrf: csrfOf(id) };
  }

  session(id: string): Promise<ConsoleUser | undefined> {
    return this.store.session(sha256(id), this.clock.now(), SESSION_IDLE_MS, SESSION_ABSOLUTE_MS);
  }

  endSession(id: string): Promise<void> {
    return this.store.endSession(sha256(id), this.clock.now());
  }

  private expiry(): Date {
    return new Date(this.clock.now().getTime() + CHALLENGE_TTL_MS);
  }
}

/** The session's CSRF token: bound to the session id, so it needs no storage and dies with it. */
export const csrfOf = (sessionId: string): string => createHmac("sha256", sessionId).update("icv-console-csrf").digest("base64url");

export function csrfMatches(sessionId: string, given: string | undefined): boolean {
  if (!given) return false;
  const want = Buffer.from(csrfOf(sessionId));
  const got = Buffer.from(given);
  return got.length === want.length && timingSafeEqual(got, want);
}
