/**
 * The sign-in link of an OAuth verification (DECISIONS.md, "Social and exchange accounts"):
 * `{PUBLIC_BASE_URL}/oauth/{channel}/start?t={verification id}.{secret}`. The secret is 32 random
 * bytes (hex), stored only as the verification's code HMAC, and spent by the first start: a
 * link works once, and a failed sign-in that leaves attempts gets a fresh one.
 */
import { randomBytes } from "node:crypto";

/** A new link secret (hex: the code HMAC compares codes case-folded). */
export const newLinkSecret = (): string => randomBytes(32).toString("hex");

export const startLink = (publicBaseUrl: string, channel: string, verificationId: string, secret: string) =>
  `${publicBaseUrl}/oauth/${encodeURIComponent(channel)}/start?t=${encodeURIComponent(`${verificationId}.${secret}`)}`;

const TOKEN = /^(ver_[0-9A-HJKMNP-TV-Z]{26})\.([0-9a-f]{64})$/;

/** The verification id and secret of a link's `t`, or undefined when it is not one. */
export function parseLinkToken(t: string): { verificationId: string; secret: string } | undefined {
  const m = TOKEN.exec(t);
  return m ? { verificationId: m[1], secret: m[2] } : undefined;
}
