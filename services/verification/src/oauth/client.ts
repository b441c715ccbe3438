/**
 * The OAuth 2.0 client (oauth4webapi): the authorization URL (code flow, PKCE S256, state, and a
 * nonce for OpenID Connect), then, on the callback, the code traded for tokens and the signed-in
 * account read from the provider's user API. The tokens live in this module's locals only: used
 * once, never stored, never logged (errors carry the provider's error code, nothing else).
 */
import * as oauth from "oauth4webapi";
import type { ProviderAccount, ProviderSettings } from "./providers.ts";

/** The provider refused or failed; `reason` is safe to log (an OAuth error code or a kind). */
export class ProviderError extends Error {
  constructor(readonly reason: string) {
    super(`the provider failed: ${reason}`);
    this.name = "ProviderError";
  }
}

export interface Flow {
  redirectUri: string;
  state: string;
  verifier: string;
  nonce: string;
}

const TIMEOUT_MS = 10_000;

function server(p: ProviderSettings): oauth.AuthorizationServer {
  return {
    issuer: p.row.oidcIssuer ?? p.row.issuer ?? new URL(p.tokenUrl).origin,
    authorization_endpoint: p.authorizationUrl,
    token_endpoint: p.tokenUrl,
    userinfo_endpoint: p.userUrl,
  };
}

/** Where the user signs in: the provider's authorization endpoint with our client, scopes, state and PKCE challenge. */
export async function authorizationUrl(p: ProviderSettings, f: Flow): Promise<string> {
  const url = new URL(p.authorizationUrl);
  const q = url.searchParams;
  q.set(p.row.clientIdParam ?? "client_id", p.clientId);
  q.set("response_type", "code");
  q.set("redirect_uri", f.redirectUri);
  q.set("scope", p.row.scopes.join(p.row.scopeSeparator ?? " "));
  q.set("state", f.state);
  q.set("code_challenge", await oauth.calculatePKCECodeChallenge(f.verifier));
  q.set("code_challenge_method", "S256");
  if (p.row.oidcIssuer) q.set("nonce", f.nonce);
  return url.href;
}

/**
 * The callback's code → tokens (PKCE verifier, client secret) → the signed-in account. OIDC
 * providers must answer an id_token whose issuer, audience, nonce and times check out, and a
 * userinfo whose `sub` is the id_token's. Throws ProviderError on any refusal or failure.
 */
export async function signedInAccount(p: ProviderSettings, f: Flow, callback: URLSearchParams): Promise<ProviderAccount | undefined> {
  const as = server(p);
  const client: oauth.Client = { client_id: p.clientId };
  const auth = p.row.clientAuth === "basic" ? oauth.ClientSecretBasic(p.clientSecret) : oauth.ClientSecretPost(p.clientSecret);
  const opts = () => ({
    signal: AbortSignal.timeout(TIMEOUT_MS),
    // plain http only reaches here for a stand-in: config.ts refuses it unless ALLOW_PRIVATE_TARGETS is on
    [oauth.allowInsecureRequests]: p.tokenUrl.startsWith("http:") || p.userUrl.startsWith("http:"),
  });
  try {
    // RFC 9207 `iss` is checked where the provider's issuer is known; elsewhere it is dropped (each
    // provider has its own callback path, which already rules out a mix-up between providers)
    const answer = new URLSearchParams(callback);
    if (!p.row.oidcIssuer && !p.row.issuer) answer.delete("iss");
    const params = oauth.validateAuthResponse(as, client, answer, f.state);
    const res = await oauth.authorizationCodeGrantRequest(as, client, auth, params, f.redirectUri, f.verifier, {
      ...opts(),
      ...(p.row.tokenAnswer ? { [oauth.customFetch]: reshaped(p.row.tokenAnswer) } : {}),
      ...(p.row.clientIdParam ? { additionalParameters: { [p.row.clientIdParam]: p.clientId } } : {}),
    });
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      res,
      p.row.oidcIssuer ? { expectedNonce: f.nonce, requireIdToken: true } : undefined,
    );
    if (p.row.oidcIssuer) {
      const sub = oauth.getValidatedIdTokenClaims(tokens)!.sub;
      const info = await oauth.processUserInfoResponse(as, client, sub, await oauth.userInfoRequest(as, client, tokens.access_token, opts()));
      return p.row.account(info as Record<string, unknown>);
    }
    const user = await oauth.protectedResourceRequest(
      tokens.access_token,
      "GET",
      new URL(p.userUrl),
      new Headers({ accept: "application/json" }),
      null,
      opts(),
    );
    if (!user.ok) throw new ProviderError(`user_api_${user.status}`);
    const body = (await user.json().catch(() => undefined)) as Record<string, unknown> | undefined;
    return body && typeof body === "object" ? p.row.account(body) : undefined;
  } catch (e) {
    throw e instanceof ProviderError ? e : new ProviderError(reasonOf(e));
  }
}

/** fetch, with a successful JSON answer rewritten by the provider row (its token answer made RFC 6749's shape). */
function reshaped(fix: (body: Record<string, unknown>) => Record<string, unknown>) {
  return async (url: string, init: RequestInit): Promise<Response> => {
    const res = await fetch(url, init);
    if (!res.ok) return res;
    const body = (await res.json().catch(() => undefined)) as Record<string, unknown> | undefined;
    return Response.json(body && typeof body === "object" ? fix(body) : body, { status: res.status });
  };
}

function reasonOf(e: unknown): string {
  if (e instanceof oauth.ResponseBodyError) return String(e.error).slice(0, 64);
  if (e instanceof oauth.AuthorizationResponseError) return String(e.error).slice(0, 64);
  if (e instanceof oauth.WWWAuthenticateChallengeError) return "www_authenticate_challenge";
  if (e instanceof oauth.OperationProcessingError) return String(e.code).toLowerCase();
  if (e instanceof Error && (e.name === "TimeoutError" || e.name === "AbortError")) return "timeout";
  return "network";
}
