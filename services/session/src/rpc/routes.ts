import type { ConnectRouter } from "@connectrpc/connect";
import type { JsonObject } from "@bufbuild/protobuf";
import { SessionService, type Session } from "@icv/contracts/gen/icv/session/v1/session_service_pb.ts";
import { AppError, requireScope, ts } from "@icv/platform";
import type { Inbound } from "../inbound.ts";
import type { SessionView, Sessions } from "../sessions.ts";
import type { SessionKind } from "../store/sessions.ts";

const kindOf = (k: string): SessionKind => {
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

export function sessionRoutes(sessions: Sessions, inbound: Inbound) {
  return (router: ConnectRouter) =>
    router.service(SessionService, {
      async createSession(req) {
        const v = await sessions.create(requireScope(req.scope), kindOf(req.kind), {
          channel: req.channel,
          phoneNumber: req.phoneNumber,
          type: req.type,
          clientMetadata: req.clientMetadata,
          projectId: req.projectId,
        });
        return { session: toMessage(v) };
      },
      async getSession(req) {
        return { session: toMessage(await sessions.get(requireScope(req.scope), kindOf(req.kind), req.id)) };
      },
      async testVerifySession(req) {
        return { session: toMessage(await sessions.testVerify(requireScope(req.scope), kindOf(req.kind), req.id, req.phoneNumber)) };
      },
      async getSessionPage(req) {
        const p = await sessions.page(req.id, req.signature);
        return { session: toMessage(p.view), tenantId: p.view.row.tenant_id, businessName: p.businessName };
      },
      async getSessionQrCode(req) {
        return { png: await sessions.qrPng(req.id, req.signature) };
      },
      async handleInbound(req) {
        return inbound.deliver(req.provider, req.body);
      },
    });
}
