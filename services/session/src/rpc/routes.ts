import type { ConnectRouter } from "@connectrpc/connect";
import { SessionService } from "@icv/contracts/gen/icv/session/v1/session_service_pb.ts";
import { requireScope } from "@icv/platform";
import type { Inbound } from "../inbound.ts";
import type { Sessions } from "../sessions.ts";
import { kindOf, toMessage } from "./convert.ts";

/** The session service's RPC handlers: each checks the request's shape, calls one use case and converts its answer. */
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
