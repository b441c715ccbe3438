import type { HostedRequest } from "@icv/contracts/gen/icv/verification/v1/verification_request_service_pb.ts";
import { ts } from "@icv/platform";
import type { HostedView } from "./requests/hosted.ts";
import type { Requests } from "./requests/index.ts";

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

/** The hosted page's RPCs of VerificationRequestService (authorised by the request token alone). */
export function hostedHandlers(requests: Requests) {
  const msg = (h: HostedView) => ({ request: toHostedMessage(h) });
  return {
    async getHostedRequest(req: { requestId: string; token: string }) {
      return msg(await requests.hostedView(req.requestId, req.token));
    },
    async startHostedAsset(req: { requestId: string; token: string; assetIndex: number; identifier?: string; channel?: string; delivery?: string }) {
      return msg(await requests.hostedStart(req.requestId, req.token, req.assetIndex, { identifier: req.identifier, channel: req.channel, delivery: req.delivery }));
    },
    async submitHostedAsset(req: { requestId: string; token: string; assetIndex: number; challengeCode?: string; signature?: string; botToken?: string }) {
      return msg(
        await requests.hostedSubmit(req.requestId, req.token, req.assetIndex, { challengeCode: req.challengeCode, signature: req.signature, botToken: req.botToken }),
      );
    },
    async testVerifyHostedAsset(req: { requestId: string; token: string; assetIndex: number }) {
      return msg(await requests.hostedTestVerify(req.requestId, req.token, req.assetIndex));
    },
  };
}
