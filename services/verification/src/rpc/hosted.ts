import { toHostedMessage } from "./convert.ts";
import type { HostedView } from "../requests/hosted.ts";
import { hostedCheck, hostedStart, hostedSubmit, hostedTestVerify, hostedView } from "../requests/hosted-actions.ts";
import type { RequestDeps } from "../requests/input.ts";

/** The hosted page's RPCs of VerificationRequestService (authorised by the request token alone). */
export function hostedHandlers(requests: RequestDeps) {
  const msg = (h: HostedView) => ({ request: toHostedMessage(h) });
  return {
    async getHostedRequest(req: { requestId: string; token: string }) {
      return msg(await hostedView(requests, req.requestId, req.token));
    },
    async startHostedAsset(req: { requestId: string; token: string; assetIndex: number; identifier?: string; channel?: string; delivery?: string }) {
      return msg(
        await hostedStart(requests, req.requestId, req.token, req.assetIndex, {
          identifier: req.identifier,
          channel: req.channel,
          delivery: req.delivery,
        }),
      );
    },
    async submitHostedAsset(req: {
      requestId: string;
      token: string;
      assetIndex: number;
      challengeCode?: string;
      signature?: string;
      botToken?: string;
      apiKey?: string;
      apiSecret?: string;
    }) {
      return msg(
        await hostedSubmit(requests, req.requestId, req.token, req.assetIndex, {
          challengeCode: req.challengeCode,
          signature: req.signature,
          botToken: req.botToken,
          apiKey: req.apiKey,
          apiSecret: req.apiSecret,
        }),
      );
    },
    async testVerifyHostedAsset(req: { requestId: string; token: string; assetIndex: number }) {
      return msg(await hostedTestVerify(requests, req.requestId, req.token, req.assetIndex));
    },
    async checkHostedAsset(req: { requestId: string; token: string; assetIndex: number }) {
      return msg(await hostedCheck(requests, req.requestId, req.token, req.assetIndex));
    },
  };
}
