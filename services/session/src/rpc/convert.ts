import type { JsonObject } from "@bufbuild/protobuf";
import type { Session } from "@icv/contracts/gen/icv/session/v1/session_service_pb.ts";
import { AppError, ts } from "@icv/platform";
import type { SessionView } from "../sessions.ts";
import type { SessionKind } from "../store/sessions.ts";

/** The RPC's kind string, checked. */
export const kindOf = (k: string): SessionKind => {
  if (k !== "phone" && k !== "auth") throw new AppError("validation_error", "kind must be phone or auth");
  return k;
};

/** Row → RPC message. */
export function toMessage({ row: s, deepLink, qrCode, instructions, pageUrl }: SessionView): Omit<Session, "$typeName" | "$unknown"> {
  return {
    id: s.id,
    kind: s.kind,
    channel: s.channel,
    status: s.status,
    type: s.auth_type ?? "",
    deepLink,
    qrCode,
    expiresAt: ts(s.expires_at),
    instructions,
    phoneNumber: s.phone_number ?? undefined,
    verifiedAt: ts(s.verified_at),
    verificationId: s.verification_id ?? undefined,
    proof: s.proof_token ? { $typeName: "icv.session.v1.SessionProof", token: s.proof_token, expiresAt: ts(s.proof_expires_at) } : undefined,
    clientMetadata: (s.client_metadata as JsonObject | null) ?? undefined,
    createdAt: ts(s.created_at),
    failedAt: ts(s.failed_at),
    testMode: s.environment === "test",
    projectId: s.project_id ?? undefined,
    sessionUrl: pageUrl,
  };
}
