import { toHostedMessage } from "./convert.ts";
import type { HostedView } from "../requests/hosted.ts";
import type { Requests } from "../requests/index.ts";

/** The hosted page's RPCs of VerificationRequestService (authorised by the request token alone). */
export function hostedHandlers(requests: Requests) {
  const msg = (h: HostedView) => ({ request: toHostedMessage(h) });
  return {
    async getHostedRequest(req: { requestId: string; token: string }) {
      return msg(await requests.hostedView(req.requestId, req.token));
    },
    async startHostedAsset(req: { requestId: string; token: string; assetIndex: number; identifier?: string; channel?: string; delivery?: string }) {
      return msg(
        await requests.hostedStart(req.requestId, req.token, req.assetIndex, {
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
        await requests.hostedSubmit(req.requestId, req.token, req.assetIndex, {
          challengeCode: req.challengeCode,
          signature: req.signature,
          botToken: req.botToken,
          apiKey: req.apiKey,
          apiSecret: req.apiSecret,
        }),
      );
    },
    async testVerifyHostedAsset(req: { requestId: string; token: string; assetIndex: number }) {
      return msg(await requests.hostedTestVerify(req.requestId, req.token, req.assetIndex));
    },
    async checkHostedAsset(req: { requestId: string; token: string; assetIndex: number }) {
      return msg(await requests.hostedCheck(req.requestId, req.token, req.assetIndex));
    },
  };
}
