/** The channels completed by an OAuth 2.0 sign-in (social accounts, coinbase; src/oauth/ runs it, docs/oauth.md). */
import { z } from "zod";
import { providerUrl, type AssetType, type Config, type ConfigShape } from "@icv/platform";
import { MIN, need, notBySubmit, type Channel, type NormalizedIdentifier } from "../channel.ts";
import { noEvidence } from "./evidence.ts";
import { takes } from "./options.ts";
import { newLinkSecret, startLink } from "./sign-in-link.ts";

const TTL_MS = 10 * MIN;

/**
 * An OAuth channel's keys: OAUTH_<CHANNEL>_CLIENT_ID and _CLIENT_SECRET (the app registered with
 * the provider), and _AUTHORIZATION_URL, _TOKEN_URL, _USERINFO_URL (default: the provider's real
 * endpoints, oauth/providers.ts; set them only to point at a stand-in).
 */
function oauthConfig(channel: string): ConfigShape {
  const up = `OAUTH_${channel.toUpperCase()}`;
  return {
    [`${up}_CLIENT_ID`]: z.string().min(1).max(512).optional(),
    [`${up}_CLIENT_SECRET`]: z.string().min(1).max(1024).optional(),
    [`${up}_AUTHORIZATION_URL`]: providerUrl(),
    [`${up}_TOKEN_URL`]: providerUrl(),
    [`${up}_USERINFO_URL`]: providerUrl(),
  };
}

/** An OAuth channel: `name` on the page, the identifier's normal form and mask; the client id and secret come from OAUTH_<CHANNEL>_*. */
export function oauthChannel(spec: {
  type: AssetType;
  channel: string;
  name: string;
  normalize(raw: string): NormalizedIdentifier;
  mask(value: string): string;
}): Channel {
  const upper = spec.channel.toUpperCase();
  return {
    ...spec,
    method: "oauth",
    ttlMs: TTL_MS,
    options: takes(),
    evidence: noEvidence,
    form: { name: spec.name, deliveries: [], step: "sign_in", fields: [] },
    config: oauthConfig(spec.channel),
    missingProvider: (config: Config) => need(config, `OAUTH_${upper}_CLIENT_ID`, `OAUTH_${upper}_CLIENT_SECRET`),
    challenge: ({ id, identifier, now, config }) => {
      const secret = newLinkSecret();
      return {
        // the link's secret: stored only as the code HMAC, never shown apart from the link
        code: secret,
        showCode: false,
        expiresAt: new Date(now.getTime() + TTL_MS),
        instruction: `Sign in with ${spec.channel} as ${identifier} to confirm you control the account.`,
        deepLink: startLink(config.publicBaseUrl, spec.channel, id, secret),
      };
    },
    complete: (v) => notBySubmit(v, "signing in"),
  };
}
