/**
 * The `method` claim every proof carries (DECISIONS.md "Verifications"): how control of the asset
 * was shown. One list for the proof service (which refuses any other), the verification service
 * (which names one on every completion) and the gateway's schemas.
 */
export const PROOF_METHODS = [
  "reverse_otp", // the user sent our code from the phone (provider-signed inbound message)
  "otp", // a code we delivered to the asset was typed back (email, outbound phone, domain by email)
  "signature", // a wallet signature
  "oauth",
  "api_key",
  "bot_token",
  "dns_txt",
  "http_file",
  "dns_provider",
  "reused_proof", // made from an earlier proof (smart reuse)
  "test", // test-verify: nothing was shown (test keys only)
] as const;

export type ProofMethod = (typeof PROOF_METHODS)[number];
