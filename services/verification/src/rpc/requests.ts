import type { ConnectRouter } from "@connectrpc/connect";
import { VerificationRequestService } from "@icv/contracts/gen/icv/verification/v1/verification_request_service_pb.ts";
import { pageInfo, pageRequest, requireScope, ts } from "@icv/platform";
import { channelFor } from "../channels/registry.ts";
import type { Requests } from "../requests/index.ts";
import { hostedHandlers } from "./hosted.ts";
import { toRequestMessage } from "./convert.ts";
import type { RequestView } from "../store/index.ts";

/** The VerificationRequestService handlers (thin: the use cases live in requests.ts). */
export function verificationRequestRoutes(requests: Requests) {
  const msg = (r: RequestView) => ({ request: toRequestMessage(r, requests.urlOf(r)) });
  return (router: ConnectRouter) =>
    router.service(VerificationRequestService, {
      async createVerificationRequest(req) {
        return msg(
          await requests.create(requireScope(req.scope), {
            assets: req.assets.map((a) => ({
              type: a.type,
              identifier: a.identifier,
              channel: a.channel,
              allowedChannels: a.allowedChannels,
              required: a.required,
              proofFormat: a.proofFormat,
              holderKey: a.holderKey,
            })),
            referenceId: req.referenceId,
            actionType: req.actionType,
            actionContext: req.actionContext ? { title: req.actionContext.title, description: req.actionContext.description } : undefined,
            redirectUrl: req.redirectUrl,
            callbackUrl: req.callbackUrl,
            expiresIn: req.expiresIn,
            partialOk: req.partialOk,
            externalUserId: req.externalUserId,
            clientMetadata: req.clientMetadata,
            maxProofAge: req.maxProofAge,
            projectId: req.projectId,
          }),
        );
      },
      async getVerificationRequest(req) {
        return msg(await requests.get(requireScope(req.scope), req.id));
      },
      async getVerificationRequestByReference(req) {
        return msg(await requests.byReference(requireScope(req.scope), req.referenceId));
      },
      async listVerificationRequests(req) {
        const { page, limit, offset } = pageRequest(req.page);
        const { rows, total } = await requests.list(requireScope(req.scope), {
          status: req.status,
          referenceId: req.referenceId,
          limit,
          offset,
        });
        return { requests: rows.map((r) => msg(r).request), pageInfo: pageInfo(page, limit, total) };
      },
      async cancelVerificationRequest(req) {
        const r = await requests.cancel(requireScope(req.scope), req.id);
        return { id: r.id, status: r.status };
      },
      async listReusableProofs(req) {
        const offers = await requests.reusableProofs(req.requestId, req.token);
        return {
          proofs: offers.map((o) => ({
            assetIndex: o.assetIndex,
            verificationId: o.verificationId,
            type: o.type,
            channel: o.channel,
            identifier: o.identifier,
            verifiedAt: ts(o.verifiedAt),
            proofExpiresAt: ts(o.proofExpiresAt),
          })),
        };
      },
      async autoVerifyAsset(req) {
        const { request, verification: v } = await requests.autoVerify(req.requestId, req.token, req.assetIndex, req.verificationId);
        return {
          requestId: request.id,
          requestStatus: request.status,
          assetIndex: req.assetIndex,
          assetStatus: request.assets.find((a) => a.idx === req.assetIndex)?.status ?? "verified",
          verificationId: v.id,
          reusedFrom: v.reused_from ?? "",
          type: v.type,
          channel: v.channel,
          identifier: channelFor(v.type, v.channel).mask(v.identifier),
          verifiedAt: ts(v.verified_at),
          proofExpiresAt: ts(v.proof_expires_at),
        };
      },
      ...hostedHandlers(requests),
    });
}
