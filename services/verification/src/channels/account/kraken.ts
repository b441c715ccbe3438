/**
 * A Kraken account, named by its public account id (IIBAN): a read-only API key checked once with
 * Kraken's private API (GetApiKeyInfo), never stored (docs/oauth.md).
 */
import { AppError, providerUrl, settingsOf, type Config } from "@icv/platform";
import { checkRaw, invalid, MIN, type Channel, type NormalizedIdentifier } from "../channel.ts";
import { apiKeyEvidence } from "../shared/evidence.ts";
import { takes } from "../shared/options.ts";
import { parseWith } from "../shared/parse.ts";
import { maskAccount } from "../shared/mask.ts";
import { krakenKeyInfo, READ_ONLY } from "./kraken-api.ts";

const TTL_MS = 10 * MIN;

const config = {
  // Kraken's REST API (set only to point at a stand-in)
  KRAKEN_API_URL: providerUrl("https://api.kraken.com"),
};

/**
 * A Kraken account is named by its public account id, the IIBAN (`AA88 N84G WOAK NMOI`, shown under
 * Settings → Account): compared without spaces and upper case, displayed in groups of four.
 */
function normalizeIiban(raw: string): NormalizedIdentifier {
  const compact = checkRaw(raw).replace(/\s+/g, "").toUpperCase();
  if (!/^AA[A-Z0-9]{14}$/.test(compact)) invalid("a Kraken account is its public account id (IIBAN), like AA88 N84G WOAK NMOI");
  return { value: compact.match(/.{4}/g)!.join(" "), canonical: compact };
}

export const kraken: Channel = {
  type: "account",
  channel: "kraken",
  method: "api_key",
  ttlMs: TTL_MS,
  options: takes(),
  evidence: apiKeyEvidence,
  form: {
    name: "Kraken",
    deliveries: [],
    step: "api_key",
    fields: [
      { name: "api_key", label: "API key", input: "text" },
      { name: "api_secret", label: "Private key (secret)", input: "password" },
    ],
  },
  config,
  // the user's own key is the only credential
  missingProvider: (_config: Config) => [],
  normalize: normalizeIiban,
  challenge: ({ identifier, now }) => ({
    showCode: false,
    expiresAt: new Date(now.getTime() + TTL_MS),
    instruction: `Create a read-only API key for the Kraken account ${identifier} (Settings → API; only "Query Funds"), then submit the key and its secret. We call Kraken once to read the key's account and never store either.`,
  }),
  async complete(v, body, ctx) {
    const e = parseWith(apiKeyEvidence, body);
    const info = await krakenKeyInfo(settingsOf(ctx.config, config).KRAKEN_API_URL, e.key, e.secret);
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
  mask: maskAccount,
};
