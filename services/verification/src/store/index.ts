/** The verification service's storage: one file per aggregate; the only files with SQL. */
export * from "./rows.ts";
export { TEST_MESSAGE_TTL_MS } from "./test-messages.ts";
export { VerificationStore } from "./verifications.ts";
export { RequestStore } from "./requests.ts";
