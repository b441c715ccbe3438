/** A request's input: limits, the create body and its checks (callback and redirect URLs, assets). */
import { ACTION_TYPES, AppError, OutboundError, parseTargetUrl, type Clock, type Config, type Logger, type Resolver } from "@icv/platform";
import { ASSET_TYPES, CHANNELS_BY_TYPE, type AssetType } from "@icv/platform";
import { channelFor } from "../channels/registry.ts";
import type { ProjectStore, RequestAssetRow, RequestStore } from "../store/index.ts";
import { proofOptions, type Verifications } from "../verifications/index.ts";

export const DEFAULT_REQUEST_TTL_S = 86_400;
export const MIN_REQUEST_TTL_S = 60;
export const MAX_REQUEST_TTL_S = 604_800;
export const MAX_ASSETS = 10;
// what a request asks the user to do: @icv/platform's vocabulary
export { ACTION_TYPES };
/** Starts of one asset (its verification made, at creation or from the page); the next one fails the asset. */
export const MAX_ASSET_STARTS = 3;
export const MAX_METADATA_BYTES = 4096;

export interface AssetInput {
  type: string;
  identifier?: string;
  channel?: string;
  allowedChannels?: string[];
  required?: boolean;
  proofFormat?: string;
  holderKey?: unknown;
}

export interface CreateRequestInput {
  assets: AssetInput[];
  referenceId?: string;
  actionType?: string;
  actionContext?: { title?: string; description?: string };
  redirectUrl?: string;
  callbackUrl?: string;
  expiresIn?: number;
  partialOk?: boolean;
  externalUserId?: string;
  clientMetadata?: Record<string, unknown>;
  /** Seconds (smart reuse): reused proofs must have been verified at most this long before the request. */
  maxProofAge?: number;
  /** The project whose branding, templates and callbacks the request uses. */
  projectId?: string;
}

/** The template type of a request's code messages, by its action_type. */
export const messageTypeOf = (actionType: string) => (actionType === "login" ? "login_request" : actionType === "2fa" ? "2fa_request" : undefined);

export interface RequestDeps {
  store: RequestStore;
  verifications: Verifications;
  clock: Clock;
  config: Config;
  /** HMAC key of the verification_url tokens. */
  tokenKey: string;
  publicBaseUrl: string;
  /** ALLOW_PRIVATE_TARGETS: accept loopback and private callback URLs (tests, local setups). */
  allowPrivateTargets: boolean;
  resolver?: Resolver;
  logger: Logger;
  /** Projects: a request's branding and default callbacks (absent: none). */
  projects?: ProjectStore;
}

export const invalid = (message: string, field?: string) =>
  new AppError("validation_error", message, field ? { details: [{ field, message, code: "invalid" }] } : {});

export function checkRedirectUrl(input: string): string {
  try {
    return parseTargetUrl(input.trim()).toString();
  } catch (e) {
    if (e instanceof OutboundError) throw invalid(`invalid redirect_url: ${e.message}`, "redirect_url");
    throw e;
  }
}

export const text = (v: string | undefined, name: string, max: number): string | null => {
  if (v === undefined) return null;
  if (v.length < 1 || v.length > max) throw invalid(`${name} must be 1 to ${max} characters`, name);
  return v;
};

/** Validates one asset; answers its row (identifier normalized) without request id and status. */
export function assetRow(a: AssetInput, i: number): Omit<RequestAssetRow, "request_id" | "status" | "verification_id"> {
  const f = `assets[${i}]`;
  if (!(ASSET_TYPES as string[]).includes(a.type)) throw invalid(`${f}.type must be one of ${ASSET_TYPES.join(", ")}`, `${f}.type`);
  const type = a.type as AssetType;
  const channels: readonly string[] = CHANNELS_BY_TYPE[type];
  const allowed = a.allowedChannels?.length ? [...new Set(a.allowedChannels)] : null;
  for (const c of allowed ?? []) {
    if (!channels.includes(c))
      throw new AppError("invalid_channel_for_type", `${f}.allowed_channels: ${c} is not a channel of type ${type}; use ${channels.join(", ")}`);
  }
  if (a.channel !== undefined) {
    if (!channels.includes(a.channel))
      throw new AppError("invalid_channel_for_type", `${f}.channel ${a.channel} is not valid for type ${type}; use one of ${channels.join(", ")}`);
    if (allowed && !allowed.includes(a.channel)) throw invalid(`${f}.channel must be one of its allowed_channels`, `${f}.channel`);
  }
  let identifier: string | null = null;
  if (a.identifier !== undefined) {
    try {
      identifier = channelFor(type, a.channel ?? allowed?.[0] ?? channels[0]).normalize(a.identifier).value;
    } catch (e) {
      if (e instanceof AppError) throw new AppError(e.code, `${f}.identifier: ${e.message}`, { details: e.details, extra: e.extra });
      throw e;
    }
  }
  return { idx: i, type, identifier, channel: a.channel ?? null, allowed_channels: allowed, required: a.required ?? true, ...proofOptions(a, `${f}.`) };
}
