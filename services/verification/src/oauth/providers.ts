/**
 * The OAuth 2.0 providers of the social and account channels: one row each, and nothing else
 * anywhere names a provider. A row says where to send the user (authorization), where to trade
 * the code (token), where to read the signed-in account (user), which scopes to ask, and how to
 * read the account's handles (any may match the verification's identifier) and stable id from
 * the user API's answer. Endpoints are overridable by configuration (OAUTH_{P}_*_URL, declared by
 * the OAuth channels: channels/shared/oauth-channel.ts) so tests run local stand-ins; docs/oauth.md
 * says what each provider compares. The OAuth channels are vocabulary.proto's (OAUTH_CHANNELS);
 * test/oauth-providers.test.ts holds this table to them.
 */
import { OAUTH_CHANNELS, type Config } from "@icv/platform";

export interface ProviderAccount {
  /** The account's names the identifier may equal (normalized by the channel before comparing). */
  handles: string[];
  /** The provider's stable id of the account (the proof's subject_hash is made from it). */
  subject: string;
}

type Json = Record<string, unknown>;

export interface ProviderRow {
  authorizationUrl: string;
  tokenUrl: string;
  userUrl: string;
  scopes: string[];
  /** How the provider joins scopes (space unless it says otherwise). */
  scopeSeparator?: string;
  /** OpenID Connect: the id_token's issuer; the user API is the OIDC userinfo, whose `sub` must be the id_token's. */
  oidcIssuer?: string;
  /** The issuer a provider names in its callback's `iss` (RFC 9207), when it is not the OIDC issuer. */
  issuer?: string;
  /** How the client authenticates at the token endpoint. */
  clientAuth: "post" | "basic";
  /** The name of the client id parameter, where it is not `client_id` (TikTok: client_key). */
  clientIdParam?: string;
  /** A token answer that is not RFC 6749's shape, made into one (Instagram wraps it in `data[]` without token_type). */
  tokenAnswer?(body: Json): Json;
  /** The account in the user API's answer, or undefined when the answer has none. */
  account(body: Json): ProviderAccount | undefined;
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v.length > 0 ? v : typeof v === "number" ? String(v) : undefined);
const obj = (v: unknown): Json => (v && typeof v === "object" && !Array.isArray(v) ? (v as Json) : {});
const some = (...v: (string | undefined)[]) => v.filter((x): x is string => x !== undefined);
const account = (handles: string[], subject: string | undefined): ProviderAccount | undefined => (subject ? { handles, subject } : undefined);
/** OIDC userinfo: the email only when the provider says it is verified. */
const verifiedEmail = (b: Json) => account(b.email_verified === true ? some(str(b.email)) : [], str(b.sub));

const GOOGLE_AUTHORIZE = "https://accounts.google.com/o/oauth2/v2/auth";
const GOOGLE_TOKEN = "https://oauth2.googleapis.com/token";

export const PROVIDERS = {
  github: {
    authorizationUrl: "https://github.com/login/oauth/authorize",
    tokenUrl: "https://github.com/login/oauth/access_token",
    userUrl: "https://api.github.com/user",
    scopes: ["read:user"],
    clientAuth: "post",
    account: (b) => account(some(str(b.login)), str(b.id)),
  },
  google: {
    authorizationUrl: GOOGLE_AUTHORIZE,
    tokenUrl: GOOGLE_TOKEN,
    userUrl: "https://openidconnect.googleapis.com/v1/userinfo",
    scopes: ["openid", "email"],
    oidcIssuer: "https://accounts.google.com",
    clientAuth: "post",
    account: verifiedEmail,
  },
  facebook: {
    authorizationUrl: "https://www.facebook.com/v21.0/dialog/oauth",
    tokenUrl: "https://graph.facebook.com/v21.0/oauth/access_token",
    userUrl: "https://graph.facebook.com/v21.0/me?fields=id,name",
    scopes: ["public_profile"],
    clientAuth: "post",
    // the (app-scoped) user id; a username where the Graph API still gives one
    account: (b) => account(some(str(b.id), str(b.username)), str(b.id)),
  },
  x: {
    authorizationUrl: "https://x.com/i/oauth2/authorize",
    tokenUrl: "https://api.x.com/2/oauth2/token",
    userUrl: "https://api.x.com/2/users/me",
    scopes: ["users.read", "tweet.read"],
    clientAuth: "basic",
    account: (b) => account(some(str(obj(b.data).username)), str(obj(b.data).id)),
  },
  linkedin: {
    authorizationUrl: "https://www.linkedin.com/oauth/v2/authorization",
    tokenUrl: "https://www.linkedin.com/oauth/v2/accessToken",
    userUrl: "https://api.linkedin.com/v2/userinfo",
    scopes: ["openid", "email"],
    oidcIssuer: "https://www.linkedin.com/oauth",
    clientAuth: "post",
    account: verifiedEmail,
  },
  instagram: {
    authorizationUrl: "https://www.instagram.com/oauth/authorize",
    tokenUrl: "https://api.instagram.com/oauth/access_token",
    userUrl: "https://graph.instagram.com/v21.0/me?fields=user_id,username",
    scopes: ["instagram_business_basic"],
    scopeSeparator: ",",
    clientAuth: "post",
    tokenAnswer: (b) => ({ token_type: "bearer", ...obj(Array.isArray(b.data) ? b.data[0] : b) }),
    account: (b) => account(some(str(b.username)), str(b.user_id) ?? str(b.id)),
  },
  youtube: {
    authorizationUrl: GOOGLE_AUTHORIZE,
    tokenUrl: GOOGLE_TOKEN,
    userUrl: "https://www.googleapis.com/youtube/v3/channels?part=snippet&mine=true",
    scopes: ["https://www.googleapis.com/auth/youtube.readonly"],
    issuer: "https://accounts.google.com",
    clientAuth: "post",
    // the signed-in user's channel: its handle (`@…`) or its channel id
    account: (b) => {
      const ch = obj(Array.isArray(b.items) ? b.items[0] : undefined);
      return account(some(str(obj(ch.snippet).customUrl), str(ch.id)), str(ch.id));
    },
  },
  tiktok: {
    authorizationUrl: "https://www.tiktok.com/v2/auth/authorize/",
    tokenUrl: "https://open.tiktokapis.com/v2/oauth/token/",
    userUrl: "https://open.tiktokapis.com/v2/user/info/?fields=open_id,username",
    scopes: ["user.info.basic", "user.info.profile"],
    scopeSeparator: ",",
    clientAuth: "post",
    clientIdParam: "client_key",
    account: (b) => {
      const user = obj(obj(b.data).user);
      return account(some(str(user.username)), str(user.open_id));
    },
  },
  coinbase: {
    authorizationUrl: "https://login.coinbase.com/oauth2/auth",
    tokenUrl: "https://login.coinbase.com/oauth2/token",
    userUrl: "https://api.coinbase.com/v2/user",
    scopes: ["wallet:user:read", "wallet:user:email"],
    scopeSeparator: ",",
    clientAuth: "post",
    account: (b) => account(some(str(obj(b.data).email), str(obj(b.data).id)), str(obj(b.data).id)),
  },
} satisfies Record<string, ProviderRow>;

/** An OAuth channel with its provider's row. */
export type OAuthProvider = keyof typeof PROVIDERS;

export const isOAuthProvider = (channel: string): channel is OAuthProvider =>
  (OAUTH_CHANNELS as readonly string[]).includes(channel) && Object.hasOwn(PROVIDERS, channel);

export interface ProviderSettings {
  row: ProviderRow;
  clientId: string;
  clientSecret: string;
  authorizationUrl: string;
  tokenUrl: string;
  userUrl: string;
}

/** A provider's row with the configured app and endpoints, or undefined when its client id or secret is not set. */
export function providerSettings(config: Config, channel: OAuthProvider): ProviderSettings | undefined {
  const env = config as unknown as Record<string, string | undefined>;
  const up = `OAUTH_${channel.toUpperCase()}`;
  const row: ProviderRow = PROVIDERS[channel];
  const clientId = env[`${up}_CLIENT_ID`];
  const clientSecret = env[`${up}_CLIENT_SECRET`];
  if (!clientId || !clientSecret) return undefined;
  return {
    row,
    clientId,
    clientSecret,
    authorizationUrl: env[`${up}_AUTHORIZATION_URL`] ?? row.authorizationUrl,
    tokenUrl: env[`${up}_TOKEN_URL`] ?? row.tokenUrl,
    userUrl: env[`${up}_USERINFO_URL`] ?? row.userUrl,
  };
}
