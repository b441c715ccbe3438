/**
 * Exchange accounts: coinbase by OAuth 2.0 sign-in (src/oauth/ runs it), kraken by a read-only
 * API key checked once with Kraken's private API (GetApiKeyInfo), never stored (docs/oauth.md).
 */
import { createHash, createHmac } from "node:crypto";
import { CHANNELS_BY_TYPE, AppError, type Config } from "@icv/platform";
import { MIN, invalid, need, notBySubmit, same, type Channel, type NormalizedIdentifier } from "./channel.ts";
import { maskEmail, maskGeneric } from "./shared/mask.ts";
import { normalizeEmail } from "./shared/names.ts";
import { newLinkSecret, startLink } from "./shared/sign-in-link.ts";

export const account: Channel = {
  type: "account",
  channels: CHANNELS_BY_TYPE.account,
  ttlMs: 10 * MIN,
  method: (channel) => (channel === "kraken" ? "api_key" : "oauth"),
  missingProvider: (channel: string, config: Config) =>
    channel === "kraken" ? [] : need(config, `OAUTH_${channel.toUpperCase()}_CLIENT_ID`, `OAUTH_${channel.toUpperCase()}_CLIENT_SECRET`),
  normalize: (channel, input) => (channel === "kraken" ? normalizeIiban(input) : same(normalizeAccount(input))),
  challenge: ({ id, channel, identifier, now, config }) => {
    const expiresAt = new Date(now.getTime() + account.ttlMs);
    if (channel === "kraken") {
      return {
        showCode: false,
        expiresAt,
        instruction: `Create a read-only API key for the Kraken account ${identifier} (Settings → API; only "Query Funds"), then submit the key and its secret. We call Kraken once to read the key's account and never store either.`,
      };
    }
    const secret = newLinkSecret();
    return {
      code: secret, // the sign-in link's secret: stored only as the code HMAC
      showCode: false,
      expiresAt,
      instruction: `Sign in with ${channel} as ${identifier} to confirm you control the account.`,
      deepLink: startLink(config.publicBaseUrl, channel, id, secret),
    };
  },
  async complete(v, e, ctx) {
    if (v.channel !== "kraken") return notBySubmit(v, "signing in");
    const apiKey = e.apiKey ?? e.challengeCode; // the reference SDKs send the key as code, beside api_secret
    if (!apiKey || !e.apiSecret) {
      throw new AppError("validation_error", "api_key and api_secret are required for kraken verifications", {
        details: [{ field: apiKey ? "api_secret" : "api_key", message: "required", code: "required" }],
      });
    }
    const info = await krakenKeyInfo(ctx.config.KRAKEN_API_URL, apiKey, e.apiSecret);
    if (!info) return { ok: false, failure: ["invalid_code", "Kraken refused this API key and secret"] };
    const extra = info.permissions.filter((p) => !READ_ONLY.has(p));
    if (extra.length) {
      throw new AppError(
        "validation_error",
        `use a read-only API key: this one may also ${extra.join(", ")}; delete it at Kraken and create one with only "Query Funds"`,
      );
    }
    let iiban: string | undefined;
    try {
      iiban = normalizeIiban(info.iiban).canonical;
    } catch {
      iiban = undefined;
    }
    if (iiban === v.identifier_canonical) return { ok: true, method: "api_key" };
    return { ok: false, failure: ["invalid_code", "the API key belongs to another Kraken account"] };
  },
  // an account given as an email address is masked like one
  mask: (value) => (value.includes("@") ? maskEmail(value) : maskGeneric(value)),
};

// Visible ASCII, no whitespace.
const ACCOUNT_ID = /^[\x21-\x7e]{1,255}$/;

function normalizeAccount(input: string): string {
  if (input.includes("@")) return normalizeEmail(input);
  // Account ids keep their case: exchanges may treat them as case-sensitive.
  if (!ACCOUNT_ID.test(input)) invalid("account id must be 1-255 printable characters without spaces");
  return input;
}

/**
 * A Kraken account is named by its public account id, the IIBAN (`AA88 N84G WOAK NMOI`, shown under
 * Settings → Account): compared without spaces and upper case, displayed in groups of four.
 */
function normalizeIiban(input: string): NormalizedIdentifier {
  const compact = input.replace(/\s+/g, "").toUpperCase();
  if (!/^AA[A-Z0-9]{14}$/.test(compact)) invalid("a Kraken account is its public account id (IIBAN), like AA88 N84G WOAK NMOI");
  return { value: compact.match(/.{4}/g)!.join(" "), canonical: compact };
}

/** Permissions a read-only key may hold (Kraken's names); a key with any other is refused. */
const READ_ONLY = new Set(["query-funds", "query-open-trades", "query-closed-trades", "query-ledger-entries", "export-data"]);

const KEY_RE = /^[A-Za-z0-9+/=]{16,128}$/;
const SECRET_RE = /^[A-Za-z0-9+/=]{16,256}$/;
const KEY_INFO_PATH = "/0/private/GetApiKeyInfo";

/** Kraken's request signature: base64 HMAC-SHA512, keyed by the decoded secret, over path + SHA-256(nonce + body). */
export function krakenSignature(path: string, nonce: string, body: string, secret: string): string {
  const digest = createHash("sha256")
    .update(nonce + body)
    .digest();
  return createHmac("sha512", Buffer.from(secret, "base64"))
    .update(Buffer.concat([Buffer.from(path), digest]))
    .digest("base64");
}

/**
 * One signed call to Kraken's GetApiKeyInfo: the key's account (IIBAN) and permissions, or undefined
 * when Kraken refuses the key. The key and secret are used for this call only, never stored or
 * logged. Kraken unreachable or failing → service_unavailable (the user's attempt is not spent).
 */
export async function krakenKeyInfo(
  apiBase: string,
  key: string,
  secret: string,
  timeoutMs = 5_000,
): Promise<{ iiban: string; permissions: string[] } | undefined> {
  if (!KEY_RE.test(key) || !SECRET_RE.test(secret)) return undefined;
  const nonce = String(Date.now() * 1000);
  const body = new URLSearchParams({ nonce }).toString();
  let res: Response;
  try {
    res = await fetch(`${apiBase.replace(/\/+$/, "")}${KEY_INFO_PATH}`, {
      method: "POST",
      headers: {
        "API-Key": key,
        "API-Sign": krakenSignature(KEY_INFO_PATH, nonce, body, secret),
        "Content-Type": "application/x-www-form-urlencoded",
      },
      body,
      signal: AbortSignal.timeout(timeoutMs),
      redirect: "error",
    });
  } catch {
    throw new AppError("service_unavailable", "Kraken could not be reached to check the API key; try again");
  }
  const answer = (await res.json().catch(() => undefined)) as { error?: unknown; result?: { iban?: unknown; permissions?: unknown } } | undefined;
  const errors = Array.isArray(answer?.error) ? answer.error.map(String) : [];
  if (errors.some((e) => e.startsWith("EAPI:Invalid key") || e.startsWith("EAPI:Invalid signature") || e.startsWith("EGeneral:Permission denied")))
    return undefined;
  if (!res.ok || errors.length || !answer?.result) throw new AppError("service_unavailable", "Kraken could not check the API key just now; try again");
  const { iban, permissions } = answer.result;
  if (typeof iban !== "string" || !Array.isArray(permissions)) return undefined;
  return { iiban: iban, permissions: permissions.map(String) };
}
