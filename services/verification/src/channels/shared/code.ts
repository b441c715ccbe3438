/** Code evidence (email, domain by email, outbound phone): shared by the channels that check a code. */
import { checkRaw, type EvidenceContext, type NormalizedIdentifier, type PendingVerification, type Verdict } from "../channel.ts";
import { codeMatches } from "./secrets.ts";

/** The submitted code against the stored HMAC, and the optional source identifier against the asset. */
export function checkCode(
  v: PendingVerification,
  e: { code: string; source?: string },
  ctx: EvidenceContext,
  normalize: (raw: string) => NormalizedIdentifier,
): Promise<Verdict> {
  const ok = codeMatches(ctx.hmacKey, v.id, e.code, v.code_hmac ?? "") && sourceMatches(v, e.source, normalize);
  return Promise.resolve(ok ? { ok: true, method: "otp" } : { ok: false, failure: ["invalid_code", "the code is not correct"] });
}

function sourceMatches(v: PendingVerification, source: string | undefined, normalize: (raw: string) => NormalizedIdentifier): boolean {
  if (source === undefined) return true;
  try {
    return normalize(checkRaw(source)).canonical === v.identifier_canonical;
  } catch {
    return false;
  }
}
