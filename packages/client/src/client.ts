// createIcvClient: the typed client. Its calls are openapi-fetch's over the types generated from
// the OpenAPI document (src/gen/api.ts: every path, parameter and body as the gateway declares
// it), sent through a fetch that adds the API key, an Idempotency-Key on each POST and retries of
// 429/503 (retry.ts); plus waitForCompletion (wait.ts) and an offline proof verifier (proofs.ts)
// for the same service.
import createClient from "openapi-fetch";
import type { paths } from "@icv/client/api";
import { ServiceDocuments } from "./key-sets.ts";
import { createProofVerifier } from "./proofs.ts";
import { retryingFetch, type FetchLike, type RetryOptions } from "./retry.ts";
import { waitForCompletion, type WaitOptions } from "./wait.ts";

export interface IcvClientOptions {
  /** The service's origin, e.g. https://icv.example.com (no trailing path). */
  baseUrl: string;
  /** pk_live_… or pk_test_…; without it only the public calls work. */
  apiKey?: string;
  /** Retries of 429/503 (default: 3, honouring Retry-After up to 60 s); false: none. */
  retry?: RetryOptions | false;
  /** The fetch to send with (default globalThis.fetch). */
  fetch?: FetchLike;
  /** Extra headers on every call. */
  headers?: Record<string, string>;
}

export function createIcvClient(opts: IcvClientOptions) {
  const baseUrl = opts.baseUrl.replace(/\/+$/, "");
  if (!/^https?:\/\//.test(baseUrl)) throw new Error("baseUrl must be an http(s) URL");
  if (opts.apiKey !== undefined && !/^pk_(live|test)_[A-Za-z0-9_-]+$/.test(opts.apiKey)) throw new Error("apiKey must be a pk_live_… or pk_test_… key");
  const plain: FetchLike = opts.fetch ?? ((input, init) => fetch(input, init));
  const send = retryingFetch(plain, opts.retry);
  const headers = () => ({ ...opts.headers, ...(opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {}) });
  const api = createClient<paths>({ baseUrl, fetch: send, headers: headers() });
  const documents = new ServiceDocuments({ baseUrl, fetch: plain });
  const proofs = createProofVerifier(documents);
  return {
    ...api,
    /** The environment of the key: "test" for pk_test_…, "live" for pk_live_…. */
    env: opts.apiKey?.startsWith("pk_test_") ? ("test" as const) : ("live" as const),
    /** Resolves with the verification once it is no longer pending (the event stream, else polling). */
    waitForCompletion: (id: string, o?: WaitOptions) => waitForCompletion({ baseUrl, headers, fetch: send, streamFetch: plain }, id, o),
    /** Checks a proof offline against this service's key sets (cached 24 h) and status lists (5 min). */
    verifyProofOffline: proofs.verify,
  };
}

export type IcvClient = ReturnType<typeof createIcvClient>;
