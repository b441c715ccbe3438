/** The submit evidence schemas the channels share: a code, a signature, a bot token, an API key, or nothing. */
import { z } from "zod";
import type { SubmitBody } from "../channel.ts";
import { fail } from "./parse.ts";

const body = z.object({
  challengeCode: z.string().optional(),
  sourceIdentifier: z.string().optional(),
  signature: z.string().optional(),
  botToken: z.string().optional(),
  apiKey: z.string().optional(),
  apiSecret: z.string().optional(),
});

/** A 6-character code (email, domain by email, outbound phone), with the optional source identifier it came from. */
export const codeEvidence = body.transform((b, ctx) => {
  const code = b.challengeCode;
  if (!code) {
    fail(ctx, "challenge_code is required", [{ field: "challenge_code", message: "required", code: "required" }]);
    return z.NEVER;
  }
  if (!/^[A-Za-z0-9]{6}$/.test(code)) {
    fail(ctx, "challenge_code must be 6 letters or digits");
    return z.NEVER;
  }
  return { kind: "code" as const, code, source: b.sourceIdentifier };
}) satisfies z.ZodType<unknown, SubmitBody>;

/** A wallet signature (the reference SDKs send it as code). */
export const signatureEvidence = body.transform((b, ctx) => {
  const signature = b.signature ?? b.challengeCode;
  if (!signature) {
    fail(ctx, "signature is required for wallet verifications");
    return z.NEVER;
  }
  return { kind: "signature" as const, signature };
});

/** A Telegram bot's token (the reference SDKs send it as code). */
export const botTokenEvidence = body.transform((b, ctx) => {
  const token = b.botToken ?? b.challengeCode;
  if (!token) {
    fail(ctx, "bot_token is required for telegram_bot verifications");
    return z.NEVER;
  }
  return { kind: "bot_token" as const, token };
});

/** An exchange API key and its secret (the reference SDKs send the key as code, beside api_secret). */
export const apiKeyEvidence = body.transform((b, ctx) => {
  const key = b.apiKey ?? b.challengeCode;
  if (!key || !b.apiSecret) {
    fail(ctx, "api_key and api_secret are required for kraken verifications", [
      { field: key ? "api_secret" : "api_key", message: "required", code: "required" },
    ]);
    return z.NEVER;
  }
  return { kind: "api_key" as const, key, secret: b.apiSecret };
});

/** Channels completed otherwise (OAuth sign-in, DNS/HTTP checks): nothing in the body is read. */
export const noEvidence = body.transform(() => ({ kind: "none" as const }));
