/** Code evidence (email, domain by email, outbound phone): shared by the channels that check a code. */
import { AppError } from "@icv/platform";
import { codeMatches } from "./secrets.ts";
import { checkRaw, type Evidence, type EvidenceContext, type NormalizedIdentifier, type PendingVerification, type Verdict } from "../channel.ts";

/** The submitted code against the stored HMAC, and the optional source identifier against the asset. */
export function checkCode(
  v: PendingVerification,
  e: Evidence,
  ctx: EvidenceContext,
  normalize: (channel: string, input: string) => NormalizedIdentifier,
): Promise<Verdict> {
  const code = e.challengeCode;
  if (!code)
    throw new AppError("validation_error", "challenge_code is required", {
      details: [{ field: "challenge_code", message: "required", code: "required" }],
    });
  if (!/^[A-Za-z0-9]{6}$/.test(code)) throw new AppError("validation_error", "challenge_code must be 6 letters or digits");
  const ok = codeMatches(ctx.hmacKey, v.id, code, v.code_hmac ?? "") && sourceMatches(v, e.sourceIdentifier, normalize);
  return Promise.resolve(ok ? { ok: true, method: "otp" } : { ok: false, failure: ["invalid_code", "the code is not correct"] });
}

function sourceMatches(v: PendingVerification, source: string | undefined, normalize: (channel: string, input: string) => NormalizedIdentifier): boolean {
  if (source === undefined) return true;
  try {
    return normalize(v.channel, checkRaw(source)).canonical === v.identifier_canonical;
  } catch {
    return false;
  }
}
