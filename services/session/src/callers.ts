import { SessionService } from "@icv/contracts/gen/icv/session/v1/session_service_pb.ts";
import { allow } from "@icv/platform";

/**
 * Who may call the session service, per RPC (mutual TLS: the caller's certificate names it).
 * Only the gateway (public session routes, provider hooks). Everything else is PERMISSION_DENIED.
 */
export const sessionCallers = [
  allow(SessionService, {
    createSession: ["gateway"],
    getSession: ["gateway"],
    testVerifySession: ["gateway"],
    getSessionQrCode: ["gateway"],
    getSessionPage: ["gateway"],
    handleInbound: ["gateway"],
  }),
];
