/** Rows and views ⇄ RPC messages: the one place the verification service converts them. */
import { type DomainCheck, type DomainVerification, type Verification, VerificationSchema } from "@icv/contracts/gen/icv/verification/v1/verification_pb.ts";
import { type CreateVerificationRequest, CreateVerificationRequestSchema } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import type { VerificationRequest, HostedRequest } from "@icv/contracts/gen/icv/verification/v1/verification_request_service_pb.ts";
import type { JsonObject } from "@bufbuild/protobuf";
import { messageOf, plainOf, ts, type FieldRules } from "@icv/platform";
import type { HostedForm } from "../channels/channel.ts";
import { domainMethodOf, domainPublication, VALUE_PREFIX } from "../channels/domain/publication.ts";
import type { HostedView } from "../requests/hosted.ts";
import { byDisplayOrder, type PublicView } from "../profiles/index.ts";
import type { DomainCheckRow, ProfileRow, RequestView, StoredCheck, TestMessageRow, VerificationRow } from "../store/index.ts";
import type { Answer } from "../verifications/index.ts";
import type { CreateInput } from "../verifications/deps.ts";

export type VerificationInit = Omit<Verification, "$typeName" | "$unknown">;

/** What of a verification row is not a column of the same name: the challenge, the proof and test_mode. */
const ROW_RULES: FieldRules = {
  challenge: (v: VerificationRow) =>
    v.status === "pending"
      ? {
          $typeName: "icv.verification.v1.Challenge",
          expiresAt: ts(v.challenge_expires_at),
          instruction: v.instruction,
          deepLink: v.deep_link ?? undefined,
          message: v.challenge_message ?? undefined,
        }
      : undefined,
  proof: (v: VerificationRow) =>
    v.proof_token && (v.status === "verified" || v.status === "suspended" || v.status === "revoked")
      ? {
          $typeName: "icv.verification.v1.ProofRef",
          token: v.proof_token,
          expiresAt: ts(v.proof_expires_at),
          identifierSalt: v.proof_identifier_salt ?? "",
          sdJwtVc: v.proof_sd_jwt_vc ?? undefined,
        }
      : undefined,
  test_mode: (v: VerificationRow) => v.environment === "test",
};

/**
 * Row → RPC message: the columns named as the message's fields cross by the message's descriptor
 * (@icv/platform messageOf), the rest by ROW_RULES. The code appears only in the create answer, and
 * only where the user sends it.
 */
export function toMessage({ row, code }: Answer): VerificationInit {
  const message = messageOf(VerificationSchema, row, ROW_RULES) as VerificationInit;
  if (message.challenge) message.challenge.code = code;
  return message;
}

/** The create request → the create use case's input (the scope apart): its fields by name, the chain id a number. */
export const toCreateInput = (req: CreateVerificationRequest) => plainOf(CreateVerificationRequestSchema, req, ["scope"]) as unknown as CreateInput;

type Init<T> = Omit<T, "$typeName" | "$unknown">;

/** What a check saw → RPC message. */
export function toDomainCheck(c: StoredCheck | null | undefined): DomainCheck | undefined {
  if (!c) return undefined;
  return {
    $typeName: "icv.verification.v1.DomainCheck",
    passed: c.passed,
    reason: c.reason ?? "",
    scheduled: c.scheduled === true,
    summary: c.summary,
    checkedAt: ts(new Date(c.checked_at)),
    observations: c.observations.map((o) => ({
      $typeName: "icv.verification.v1.DomainObservation",
      source: o.source,
      found: o.found,
      error: o.error,
      matched: o.matched,
    })),
  };
}

/** What to publish for a domain verification checked by DNS or HTTP (none by email). */
export function toPublication(state: DomainCheckRow, domain: string) {
  if (!state.token) return { dnsRecord: undefined, httpFile: undefined };
  const p = domainPublication(domain, `${VALUE_PREFIX}${state.token}`);
  return {
    dnsRecord: { $typeName: "icv.verification.v1.DnsRecord" as const, ...p.dnsRecord },
    httpFile: { $typeName: "icv.verification.v1.HttpFile" as const, ...p.httpFile },
  };
}

/** A domain verification and its check state → the spec's domain-shaped view. */
export function toDomainMessage(v: VerificationRow, state: DomainCheckRow): Init<DomainVerification> {
  return {
    id: v.id,
    domain: v.identifier,
    status: v.status,
    verificationMethod: domainMethodOf(v.channel),
    ...toPublication(state, v.identifier),
    provider: {
      $typeName: "icv.verification.v1.DomainProvider",
      detected: state.provider_detected ?? "unknown",
      name: state.provider_name ?? "Unknown",
    },
    checkCount: state.check_count,
    lastCheck: toDomainCheck(state.last_check),
    verifiedAt: ts(v.verified_at),
    expiresAt: ts(v.challenge_expires_at),
    suspendedAt: ts(v.suspended_at),
    suspendedReason: v.suspended_reason ?? undefined,
    recheckInterval: state.recheck_interval_s ?? 0,
    nextRecheckAt: ts(state.next_recheck_at),
  };
}

/** A domain asset's check state → the page's view of it. */
function toHostedDomain(state: DomainCheckRow, domain: string) {
  return {
    $typeName: "icv.verification.v1.HostedDomain" as const,
    ...toPublication(state, domain),
    checkCount: state.check_count,
    lastCheck: toDomainCheck(state.last_check),
    nextRecheckAt: ts(state.next_recheck_at),
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
      proofFormat: a.proof_format ?? "jwt",
      holderKey: (a.holder_key ?? undefined) as JsonObject | undefined,
    })),
    verificationUrl: url,
    createdAt: ts(r.created_at),
    expiresAt: ts(r.expires_at),
    actionType: r.action_type,
    actionContext:
      r.action_title !== null || r.action_description !== null
        ? {
            $typeName: "icv.verification.v1.ActionContext",
            title: r.action_title ?? undefined,
            description: r.action_description ?? undefined,
          }
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
    projectId: r.project_id ?? undefined,
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
        ? {
            $typeName: "icv.verification.v1.ActionContext",
            title: r.action_title ?? undefined,
            description: r.action_description ?? undefined,
          }
        : undefined,
    assets: h.assets.map((a) => ({
      $typeName: "icv.verification.v1.HostedAsset",
      index: a.idx,
      type: a.type,
      identifier: a.identifier ?? undefined,
      channel: a.channel ?? undefined,
      channels: a.channels,
      availableChannels: a.available,
      forms: Object.fromEntries(Object.entries(a.forms).map(([channel, f]) => [channel, toHostedForm(f)])),
      required: a.required,
      status: a.status,
      method: a.method,
      verificationId: a.verificationId ?? undefined,
      delivery: a.delivery,
      domain: a.domain && a.identifier ? toHostedDomain(a.domain, a.identifier) : undefined,
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
    hasRedirect: r.redirect_url !== null || h.redirectTo !== undefined,
    redirectTo: h.redirectTo,
    tokenExpired: h.tokenExpired,
    branding: h.branding ? { $typeName: "icv.verification.v1.HostedBranding", ...h.branding } : undefined,
    tenantId: r.tenant_id,
  };
}

/** Profile row → RPC message (proofs in display order). */
export function toProfileMessage(p: ProfileRow) {
  return {
    id: p.id,
    displayName: p.display_name,
    bio: p.bio ?? undefined,
    avatarUrl: p.avatar_url ?? undefined,
    isPublic: p.is_public,
    proofs: [...p.proofs]
      .sort(byDisplayOrder)
      .map((x) => ({ verificationId: x.verification_id, label: x.label, maskLevel: x.mask_level, displayOrder: x.display_order })),
    createdAt: ts(p.created_at),
    updatedAt: ts(p.updated_at),
  };
}

/** A profile's public view → RPC message. */
export function toPublicProfileMessage(v: PublicView) {
  return {
    profile: {
      id: v.profile.id,
      displayName: v.profile.display_name,
      bio: v.profile.bio ?? undefined,
      avatarUrl: v.profile.avatar_url ?? undefined,
      test: v.profile.environment === "test",
      updatedAt: ts(v.profile.updated_at),
      proofs: v.proofs.map((p) => ({
        label: p.label,
        type: p.type,
        channel: p.channel,
        identifier: p.identifier,
        verifiedAt: ts(p.verifiedAt),
        status: p.status,
        expiresAt: ts(p.expiresAt),
        revokedAt: ts(p.revokedAt),
        logIndex: p.logIndex === undefined ? undefined : BigInt(p.logIndex),
      })),
    },
    checkedAt: ts(v.checkedAt),
  };
}

/** A channel's hosted-page form as its message. */
const toHostedForm = (f: HostedForm) => ({
  $typeName: "icv.verification.v1.HostedForm" as const,
  name: f.name,
  deliveries: f.deliveries.map((d) => ({ $typeName: "icv.verification.v1.HostedDelivery" as const, ...d })),
  step: f.step,
  fields: f.fields.map((x) => ({ $typeName: "icv.verification.v1.HostedFormField" as const, ...x })),
  browserWallet: f.browserWallet,
  publishes: f.publishes,
});
