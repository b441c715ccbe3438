/** Rows and views ⇄ RPC messages: the one place the verification service converts them. */
import type { Verification } from "@icv/contracts/gen/icv/verification/v1/verification_pb.ts";
import type { VerificationRequest, HostedRequest } from "@icv/contracts/gen/icv/verification/v1/verification_request_service_pb.ts";
import type { JsonObject } from "@bufbuild/protobuf";
import { ts } from "@icv/platform";
import { maskIdentifier, type AssetType } from "../channels/index.ts";
import type { HostedView } from "../requests/hosted.ts";
import type { RequestView, TestMessageRow } from "../store/index.ts";
import type { Answer } from "../verifications/index.ts";

export type VerificationInit = Omit<Verification, "$typeName" | "$unknown">;

/** Row → RPC message. The code appears only in the create answer, and only where the user sends it. */
export function toMessage({ row: v, code }: Answer): VerificationInit {
  const pending = v.status === "pending";
  return {
    id: v.id,
    type: v.type,
    channel: v.channel,
    status: v.status,
    identifier: v.identifier,
    challenge: pending
      ? {
          $typeName: "icv.verification.v1.Challenge",
          code,
          expiresAt: ts(v.challenge_expires_at),
          instruction: v.instruction,
          deepLink: v.deep_link ?? undefined,
          message: v.challenge_message ?? undefined,
        }
      : undefined,
    createdAt: ts(v.created_at),
    verifiedAt: ts(v.verified_at),
    proof:
      v.proof_token && (v.status === "verified" || v.status === "revoked")
        ? { $typeName: "icv.verification.v1.ProofRef", token: v.proof_token, expiresAt: ts(v.proof_expires_at) }
        : undefined,
    clientMetadata: (v.client_metadata as JsonObject | null) ?? undefined,
    externalUserId: v.external_user_id ?? undefined,
    attempts: v.attempts,
    maxAttempts: v.max_attempts,
    revokedAt: ts(v.revoked_at),
    revokedReason: v.revoked_reason ?? undefined,
    testMode: v.environment === "test",
    method: v.method ?? "",
    reusedFrom: v.reused_from ?? undefined,
    delivery: v.delivery ?? undefined,
  };
}

/** A stored test message → RPC message. */
export const toTestMessage = (m: TestMessageRow) => ({
  id: m.id,
  verificationId: m.verification_id ?? "",
  sessionId: m.session_id ?? undefined,
  channel: m.channel,
  direction: m.direction,
  from: m.from_address ?? undefined,
  to: m.to_address,
  subject: m.subject ?? undefined,
  text: m.body,
  createdAt: ts(m.created_at),
});

type RequestInit = Omit<VerificationRequest, "$typeName" | "$unknown">;

/** Row → RPC message. */
export function toRequestMessage(r: RequestView, url: string): RequestInit {
  return {
    id: r.id,
    status: r.status,
    referenceId: r.reference_id ?? undefined,
    assets: r.assets.map((a) => ({
      $typeName: "icv.verification.v1.RequestAsset",
      index: a.idx,
      type: a.type,
      identifier: a.identifier ?? undefined,
      channel: a.channel ?? undefined,
      allowedChannels: a.allowed_channels ?? [],
      required: a.required,
      status: a.status,
      verificationId: a.verification_id ?? undefined,
    })),
    verificationUrl: url,
    createdAt: ts(r.created_at),
    expiresAt: ts(r.expires_at),
    actionType: r.action_type,
    actionContext:
      r.action_title !== null || r.action_description !== null
        ? { $typeName: "icv.verification.v1.ActionContext", title: r.action_title ?? undefined, description: r.action_description ?? undefined }
        : undefined,
    redirectUrl: r.redirect_url ?? undefined,
    callbackUrl: r.callback_url ?? undefined,
    partialOk: r.partial_ok,
    externalUserId: r.external_user_id ?? undefined,
    clientMetadata: (r.client_metadata as JsonObject | null) ?? undefined,
    completedAt: ts(r.completed_at),
    cancelledAt: ts(r.cancelled_at),
    testMode: r.environment === "test",
    maxProofAge: r.max_proof_age ?? undefined,
  };
}

type HostedInit = Omit<HostedRequest, "$typeName" | "$unknown">;

/** The page's view → RPC message. Nothing of the tenant beyond the action context (no callback, metadata, user id, proofs). */
export function toHostedMessage(h: HostedView): HostedInit {
  const r = h.request;
  return {
    id: r.id,
    status: r.status,
    actionType: h.tokenExpired ? "" : r.action_type,
    actionContext:
      !h.tokenExpired && (r.action_title !== null || r.action_description !== null)
        ? { $typeName: "icv.verification.v1.ActionContext", title: r.action_title ?? undefined, description: r.action_description ?? undefined }
        : undefined,
    assets: h.assets.map((a) => ({
      $typeName: "icv.verification.v1.HostedAsset",
      index: a.idx,
      type: a.type,
      identifier: a.identifier ?? undefined,
      channel: a.channel ?? undefined,
      channels: a.channels,
      availableChannels: a.available,
      required: a.required,
      status: a.status,
      method: a.method,
      verificationId: a.verificationId ?? undefined,
      delivery: a.delivery,
      challenge: a.challenge
        ? {
            $typeName: "icv.verification.v1.HostedChallenge",
            code: a.challenge.code,
            instruction: a.challenge.instruction,
            deepLink: a.challenge.deepLink,
            message: a.challenge.message,
            expiresAt: ts(a.challenge.expiresAt),
            attemptsRemaining: a.challenge.attemptsRemaining,
          }
        : undefined,
    })),
    expiresAt: ts(r.expires_at),
    testMode: r.environment === "test",
    partialOk: r.partial_ok,
    hasRedirect: r.redirect_url !== null,
    redirectTo: h.redirectTo,
    tokenExpired: h.tokenExpired,
  };
}
