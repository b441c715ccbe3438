// Local stand-ins for the OAuth 2.0 providers and Kraken, on 127.0.0.1. Each OAuth stand-in speaks
// the authorization code flow as its provider does: the authorization endpoint signs in the
// account the test chose and redirects back with a code (or an error); the token endpoint checks
// the client secret (in the body, or HTTP Basic for X), the redirect URI and the PKCE verifier
// (S256) and answers tokens (an RS256 id_token for the OIDC providers, signed by the stand-in's
// own key, published at /jwks); the user endpoint answers the provider's own JSON shape for a
// valid bearer token. The Kraken stand-in checks API-Sign for real.
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT } from "jose";

export type OAuthProviderName = "github" | "google" | "facebook" | "x" | "linkedin" | "instagram" | "youtube" | "tiktok" | "coinbase";

/** The account the stand-in signs in: `handle` is the provider's handle (login, username, email, @handle…). */
export interface StandInAccount {
  id: string;
  handle: string;
}

/** The provider's user API answer for an account (its real JSON shape). */
const USER_SHAPES: Record<OAuthProviderName, (a: StandInAccount) => unknown> = {
  github: (a) => ({ login: a.handle, id: Number(a.id), node_id: `U_${a.id}`, type: "User", site_admin: false, name: "Stand In" }),
  google: (a) => ({ sub: a.id, email: a.handle, email_verified: true, name: "Stand In", picture: "https://example.test/p.png" }),
  linkedin: (a) => ({ sub: a.id, email: a.handle, email_verified: true, name: "Stand In", locale: { country: "US", language: "en" } }),
  facebook: (a) => ({ id: a.id, name: a.handle }),
  x: (a) => ({ data: { id: a.id, name: "Stand In", username: a.handle } }),
  instagram: (a) => ({ user_id: a.id, username: a.handle, id: `${a.id}0` }),
  youtube: (a) => ({
    kind: "youtube#channelListResponse",
    pageInfo: { totalResults: 1, resultsPerPage: 5 },
    items: [{ kind: "youtube#channel", id: a.id, snippet: { title: "Stand In", customUrl: a.handle } }],
  }),
  tiktok: (a) => ({ data: { user: { open_id: a.id, username: a.handle } }, error: { code: "ok", message: "", log_id: "202611240000" } }),
  coinbase: (a) => ({ data: { id: a.id, name: "Stand In", username: null, email: a.handle, resource: "user", resource_path: "/v2/user" } }),
};

/** The OIDC providers' issuers: the stand-in signs id_tokens as the real issuer. */
const OIDC_ISSUERS: Partial<Record<OAuthProviderName, string>> = {
  google: "https://accounts.google.com",
  linkedin: "https://www.linkedin.com/oauth",
};

export interface OAuthStandIn {
  name: OAuthProviderName;
  origin: string;
  clientId: string;
  clientSecret: string;
  /** Configuration for the service: OAUTH_{P}_CLIENT_ID … _USERINFO_URL. */
  env: Record<string, string>;
  /** Who signs in at the next authorization request. */
  account: StandInAccount;
  /** Set: the authorization endpoint answers this OAuth error (e.g. access_denied) instead of a code. */
  authorizeError?: string;
  /** Set: the token endpoint answers this error (e.g. temporarily_unavailable, status 503). */
  tokenError?: { status: number; error: string };
  /** Every access token and id_token issued (to check none reaches a log). */
  issued: string[];
  /** Token requests refused, with the reason (pkce, client, redirect_uri, code). */
  refused: string[];
  close(): Promise<void>;
}

const b64url = (b: Buffer) => b.toString("base64url");
const same = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

async function listen(handler: http.RequestListener): Promise<{ server: http.Server; origin: string }> {
  const server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
  });
}

const json = (res: http.ServerResponse, status: number, body: unknown) =>
  res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify(body));

export async function startOAuthProvider(name: OAuthProviderName): Promise<OAuthStandIn> {
  const clientId = `${name}-client-${b64url(randomBytes(4))}`;
  const clientSecret = `${name}-secret-${b64url(randomBytes(12))}`;
  const issuer = OIDC_ISSUERS[name];
  const { privateKey, publicKey } = await generateKeyPair("RS256");
  const jwk = { ...(await exportJWK(publicKey)), kid: "stand-in-1", alg: "RS256", use: "sig" };
  const codes = new Map<string, { challenge: string; redirectUri: string; nonce?: string; account: StandInAccount }>();
  const tokens = new Map<string, StandInAccount>();
  const clientIdParam = name === "tiktok" ? "client_key" : "client_id";

  const { server, origin } = await listen(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://stand-in");
    if (req.method === "GET" && url.pathname === "/authorize") {
      const q = url.searchParams;
      const redirectUri = q.get("redirect_uri") ?? "";
      if (q.get(clientIdParam) !== clientId || !redirectUri) return json(res, 400, { error: "invalid_request" });
      const back = new URL(redirectUri);
      back.searchParams.set("state", q.get("state") ?? "");
      if (s.authorizeError) {
        back.searchParams.set("error", s.authorizeError);
      } else {
        if (q.get("response_type") !== "code" || q.get("code_challenge_method") !== "S256" || !q.get("code_challenge"))
          return json(res, 400, { error: "invalid_request" });
        const code = b64url(randomBytes(24));
        codes.set(code, {
          challenge: q.get("code_challenge")!,
          redirectUri,
          nonce: q.get("nonce") ?? undefined,
          account: { ...s.account },
        });
        back.searchParams.set("code", code);
      }
      return res.writeHead(302, { location: back.href }).end();
    }
    if (req.method === "POST" && url.pathname === "/token") {
      const p = new URLSearchParams(await readBody(req));
      if (s.tokenError) return json(res, s.tokenError.status, { error: s.tokenError.error });
      // client authentication: HTTP Basic for X, the body for everyone else (TikTok names the id client_key)
      let id = p.get(clientIdParam) ?? "";
      let secret = p.get("client_secret") ?? "";
      const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? "");
      if (name === "x") {
        if (!basic) return (s.refused.push("client"), json(res, 401, { error: "invalid_client" }));
        [id, secret] = Buffer.from(basic[1], "base64").toString().split(":").map(decodeURIComponent);
      }
      if (id !== clientId || !same(secret, clientSecret)) return (s.refused.push("client"), json(res, 401, { error: "invalid_client" }));
      const grant = codes.get(p.get("code") ?? "");
      codes.delete(p.get("code") ?? "");
      if (p.get("grant_type") !== "authorization_code" || !grant) return (s.refused.push("code"), json(res, 400, { error: "invalid_grant" }));
      if (grant.redirectUri !== p.get("redirect_uri")) return (s.refused.push("redirect_uri"), json(res, 400, { error: "invalid_grant" }));
      const computed = b64url(
        createHash("sha256")
          .update(p.get("code_verifier") ?? "")
          .digest(),
      );
      if (!same(computed, grant.challenge))
        return (s.refused.push("pkce"), json(res, 400, { error: "invalid_grant", error_description: "PKCE verification failed" }));
      const access = `at-${name}-${b64url(randomBytes(24))}`;
      tokens.set(access, grant.account);
      s.issued.push(access);
      // Instagram answers its own shape (a data[] item, no token_type); the others RFC 6749's
      if (name === "instagram") return json(res, 200, { data: [{ access_token: access, user_id: grant.account.id, permissions: "instagram_business_basic" }] });
      const answer: Record<string, unknown> = {
        access_token: access,
        token_type: name === "tiktok" ? "Bearer" : "bearer",
        expires_in: 3600,
        scope: "read",
      };
      if (issuer) {
        const now = Math.floor(Date.now() / 1000);
        const idToken = await new SignJWT({
          email: grant.account.handle,
          email_verified: true,
          ...(grant.nonce ? { nonce: grant.nonce } : {}),
        })
          .setProtectedHeader({ alg: "RS256", kid: jwk.kid, typ: "JWT" })
          .setIssuer(issuer)
          .setSubject(grant.account.id)
          .setAudience(clientId)
          .setIssuedAt(now)
          .setExpirationTime(now + 3600)
          .sign(privateKey);
        s.issued.push(idToken);
        answer.id_token = idToken;
      }
      return json(res, 200, answer);
    }
    if (req.method === "GET" && url.pathname === "/user") {
      const m = /^Bearer (.+)$/i.exec(req.headers.authorization ?? "");
      const account = m ? tokens.get(m[1]) : undefined;
      if (!account)
        return res
          .writeHead(401, { "www-authenticate": 'Bearer error="invalid_token"', "content-type": "application/json" })
          .end('{"message":"Bad credentials"}');
      return json(res, 200, USER_SHAPES[name](account));
    }
    if (req.method === "GET" && url.pathname === "/jwks") return json(res, 200, { keys: [jwk] });
    json(res, 404, { error: "not_found" });
  });

  const up = `OAUTH_${name.toUpperCase()}`;
  const s: OAuthStandIn = {
    name,
    origin,
    clientId,
    clientSecret,
    env: {
      [`${up}_CLIENT_ID`]: clientId,
      [`${up}_CLIENT_SECRET`]: clientSecret,
      [`${up}_AUTHORIZATION_URL`]: `${origin}/authorize`,
      [`${up}_TOKEN_URL`]: `${origin}/token`,
      [`${up}_USERINFO_URL`]: `${origin}/user`,
    },
    account: { id: "1", handle: "nobody" },
    issued: [],
    refused: [],
    close() {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
  return s;
}

// ---------------------------------------------------------------------------------------------
// Kraken's private REST API (GetApiKeyInfo)

export interface KrakenKey {
  key: string;
  /** base64, as Kraken shows it */
  secret: string;
  iiban: string;
  permissions: string[];
}

export interface KrakenStandIn {
  url: string;
  /** Adds an API key of an account; answers it. */
  addKey(iiban: string, permissions?: string[]): KrakenKey;
  /** Requests refused, with Kraken's error. */
  refused: string[];
  close(): Promise<void>;
}

export async function startKrakenApi(): Promise<KrakenStandIn> {
  const keys = new Map<string, KrakenKey & { lastNonce: bigint }>();
  const refused: string[] = [];
  const { server, origin } = await listen(async (req, res) => {
    const path = new URL(req.url ?? "/", "http://stand-in").pathname;
    const body = await readBody(req);
    const fail = (error: string) => (refused.push(error), json(res, 200, { error: [error] }));
    if (req.method !== "POST" || path !== "/0/private/GetApiKeyInfo") return json(res, 404, { error: ["EGeneral:Unknown method"] });
    const k = keys.get(String(req.headers["api-key"] ?? ""));
    if (!k) return fail("EAPI:Invalid key");
    const nonce = new URLSearchParams(body).get("nonce") ?? "";
    if (!/^\d{1,20}$/.test(nonce)) return fail("EAPI:Invalid nonce");
    const digest = createHash("sha256")
      .update(nonce + body)
      .digest();
    const expected = createHmac("sha512", Buffer.from(k.secret, "base64"))
      .update(Buffer.concat([Buffer.from(path), digest]))
      .digest("base64");
    if (!same(String(req.headers["api-sign"] ?? ""), expected)) return fail("EAPI:Invalid signature");
    if (BigInt(nonce) <= k.lastNonce) return fail("EAPI:Invalid nonce");
    k.lastNonce = BigInt(nonce);
    json(res, 200, {
      error: [],
      result: {
        apiKeyName: "icv-check",
        apiKey: k.key,
        nonce,
        nonceWindow: 0,
        permissions: k.permissions,
        iban: k.iiban,
        validUntil: "0",
        queryFrom: "0",
        queryTo: "0",
        createdTime: "1772542900",
        modifiedTime: "1772543095",
        ipAllowlist: [],
        lastUsed: "0",
      },
    });
  });
  return {
    url: origin,
    refused,
    addKey(iiban, permissions = ["query-funds"]) {
      const k = { key: randomBytes(42).toString("base64"), secret: randomBytes(64).toString("base64"), iiban, permissions };
      keys.set(k.key, { ...k, lastNonce: 0n });
      return k;
    },
    close() {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}
