/** Kraken's private API: one signed GetApiKeyInfo call with a user's read-only key (docs/oauth.md). */
import { createHash, createHmac } from "node:crypto";
import { AppError } from "@icv/platform";

/** Permissions a read-only key may hold (Kraken's names); a key with any other is refused. */
export const READ_ONLY = new Set(["query-funds", "query-open-trades", "query-closed-trades", "query-ledger-entries", "export-data"]);

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
