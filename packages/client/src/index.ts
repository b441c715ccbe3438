// @icv/client: the typed ICV client (generated from the OpenAPI document) and the helpers around it.
export { createIcvClient, type IcvClient, type IcvClientOptions } from "./client.ts";
export { retryingFetch, retryAfterMs, type RetryOptions, type FetchLike } from "./retry.ts";
export { waitForCompletion, IcvApiError, WaitTimeoutError, type Verification, type WaitOptions } from "./wait.ts";
export { verifyWebhook, WebhookVerificationError, type VerifyWebhookOptions, type WebhookPayload, type WebhookScheme } from "./webhooks.ts";
export { createProofVerifier, verifyProofOffline, decodeProof, type OfflineResult, type ProofFailure, type VerifyOfflineOptions } from "./proofs.ts";
export { ServiceDocuments, TtlCache, type Env } from "./key-sets.ts";
export type { paths, components, operations } from "@icv/client/api";
