import type { ConnectRouter } from "@connectrpc/connect";
import type { JsonObject } from "@bufbuild/protobuf";
import { VerificationService } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import { ProofFormat } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import { AppError, eventMessage, isId, pageInfo, pageRequest, requireScope, toDate, ts } from "@icv/platform";
import type { EventRow, VerificationRow, VerificationStore } from "../store/index.ts";
import type { Verifications } from "../verifications/index.ts";
import { toCreateInput, toDomainCheck, toDomainMessage, toMessage, toTestMessage } from "./convert.ts";
import { systemClock, type Clock } from "@icv/platform";
import { DETAIL_STATUSES, LIST_STATUSES, toVerifiedUsers } from "../users.ts";
import type { OAuthSignIn } from "../oauth/sign-in.ts";
import { oauthHandlers } from "./oauth.ts";
import type { exportHandlers } from "./export.ts";
import type { insightHandlers } from "./insights.ts";
import type { personalDataHandlers } from "./personal-data.ts";

const one = (row: VerificationRow) => ({ verification: toMessage({ row }) });

/**
 * The events after `after` (all when unset), the newest event id, and the status as of that
 * event: both come from the same read of the outbox, so a reader that starts from
 * last_event_id misses nothing and skips nothing.
 */
export function eventsAnswer(v: VerificationRow, rows: EventRow[], after?: string) {
  let status: string = v.status;
  for (const r of rows) {
    const changed = eventMessage({ eventType: r.event_type, payload: r.payload }, "verification.status_changed");
    if (changed?.status) status = changed.status;
  }
  return {
    status,
    lastEventId: rows.at(-1)?.id ?? "",
    events: rows
      .filter((r) => !after || r.id > after)
      .map((r) => ({ id: r.id, eventType: r.event_type, payload: r.payload as JsonObject, createdAt: ts(r.created_at) })),
  };
}

export function verificationRoutes(
  verifications: Verifications,
  store: VerificationStore,
  clock: Clock = systemClock,
  signIn?: OAuthSignIn,
  exporter?: ReturnType<typeof exportHandlers> & ReturnType<typeof personalDataHandlers>,
  insights?: ReturnType<typeof insightHandlers>,
) {
  return (router: ConnectRouter) =>
    router.service(VerificationService, {
      ...(signIn ? oauthHandlers(signIn) : {}),
      ...exporter,
      ...insights,
      async createVerification(req) {
        const answer = await verifications.create(requireScope(req.scope), toCreateInput(req));
        return { verification: toMessage(answer), domainCheck: toDomainCheck(answer.domain?.last_check) };
      },
      async createDomainVerification(req) {
        const d = await verifications.createDomain(requireScope(req.scope), {
          domain: req.domain,
          customerId: req.customerId,
          verificationMethod: req.verificationMethod,
          clientMetadata: req.clientMetadata,
          recheckInterval: req.recheckInterval,
        });
        return { domain: toDomainMessage(d.row, d.state), verification: toMessage({ row: d.row }) };
      },
      async checkDomainVerification(req) {
        const d = await verifications.checkDomain(requireScope(req.scope), req.id);
        return { domain: toDomainMessage(d.row, d.state), verification: toMessage({ row: d.row }) };
      },
      async getVerification(req) {
        return one(await verifications.get(requireScope(req.scope), req.id));
      },
      async listVerifications(req) {
        const scope = requireScope(req.scope);
        const { page, limit, offset } = pageRequest(req.page);
        const { rows, total } = await verifications.list(scope, {
          status: req.status,
          type: req.type,
          channel: req.channel,
          externalUserId: req.externalUserId,
          createdAfter: toDate(req.createdAfter),
          createdBefore: toDate(req.createdBefore),
          limit,
          offset,
        });
        return { verifications: rows.map((row) => toMessage({ row })), pageInfo: pageInfo(page, limit, total) };
      },
      async submitChallenge(req) {
        return one(
          await verifications.submit(requireScope(req.scope), req.id, {
            challengeCode: req.challengeCode,
            sourceIdentifier: req.sourceIdentifier,
            signature: req.signature,
            botToken: req.botToken,
            apiKey: req.apiKey,
            apiSecret: req.apiSecret,
          }),
        );
      },
      async resendChallenge(req) {
        const r = await verifications.resend(requireScope(req.scope), req.id);
        return { verification: toMessage({ row: r.row }), message: r.message, resendsRemaining: r.resendsRemaining };
      },
      async testVerify(req) {
        return one(await verifications.testVerify(requireScope(req.scope), req.id));
      },
      async revokeVerification(req) {
        const v = await verifications.revoke(requireScope(req.scope), req.id, req.reason);
        return { verificationId: v.id, status: v.status, revokedAt: ts(v.revoked_at), reason: v.revoked_reason ?? "" };
      },
      async validateProof(req) {
        const r = await verifications.validate(requireScope(req.scope), req.proofToken, req.identifier, { audience: req.audience, nonce: req.nonce });
        return r.valid
          ? {
              valid: true,
              verificationId: r.proofId,
              type: r.type,
              channel: r.channel,
              verifiedAt: r.verifiedAt,
              expiresAt: r.expiresAt,
              testMode: r.testMode,
              method: r.method,
              proofFormat: r.format === ProofFormat.SD_JWT_VC ? "sd-jwt-vc" : "jwt",
              identifier: r.disclosedIdentifier,
              externalUserId: r.disclosedExternalUserId,
              holderBinding: r.holderBound,
            }
          : { valid: false, reason: r.reason, message: r.message };
      },
      async listVerificationEvents(req) {
        const scope = requireScope(req.scope);
        const after = req.afterEventId || undefined;
        if (after !== undefined && !isId("event", after)) throw new AppError("validation_error", "after_event_id must be an event id (evt_…)");
        // get() answers not_found outside the scope, and expires a stale pending one first (with its event)
        const v = await verifications.get(scope, req.verificationId);
        return eventsAnswer(v, await store.events(scope, v.id), after);
      },
      async listVerifiedUsers(req) {
        const scope = requireScope(req.scope);
        const { page, limit, offset } = pageRequest(req.page);
        const { rows, total } = await store.verifiedUsers(scope, limit, offset);
        const verifications = await store.userVerifications(
          scope,
          rows.map((r) => r.external_user_id),
          LIST_STATUSES,
          clock.now(),
        );
        return { users: toVerifiedUsers(rows, verifications), pageInfo: pageInfo(page, limit, total) };
      },
      async listTestMessages(req) {
        const scope = requireScope(req.scope);
        if (scope.env !== "test") throw new AppError("test_mode_required", "test messages are only kept for test keys (pk_test_)");
        if (req.verificationId !== undefined && !isId("verification", req.verificationId)) {
          throw new AppError("validation_error", "verification_id must be a verification id (ver_…)", {
            details: [{ field: "verification_id", message: "not a verification id", code: "invalid_string" }],
          });
        }
        const { page, limit, offset } = pageRequest(req.page);
        const { rows, total } = await store.testMessages(scope, { verificationId: req.verificationId, limit, offset });
        return { messages: rows.map(toTestMessage), pageInfo: pageInfo(page, limit, total) };
      },
      async recordTestMessage(req) {
        if (req.direction !== "inbound" && req.direction !== "outbound") throw new AppError("validation_error", "direction must be inbound or outbound");
        const row = await verifications.recordTestMessage(requireScope(req.scope), {
          sessionId: req.sessionId,
          channel: req.channel,
          direction: req.direction,
          from: req.from,
          to: req.to,
          text: req.text,
        });
        return { message: toTestMessage(row) };
      },
      async completeInboundCode(req) {
        const r = await verifications.completeInbound(req.channel, req.code, req.sender, req.messageKey || undefined);
        return {
          outcome: r.outcome,
          verificationId: r.verificationId ?? "",
          attemptsRemaining: r.attemptsRemaining ?? 0,
          reply: r.reply,
          businessName: r.businessName,
        };
      },
      async recordSessionVerification(req) {
        return one(
          await verifications.recordSessionVerification(requireScope(req.scope), {
            channel: req.channel,
            phoneNumber: req.phoneNumber,
            origin: req.origin,
            proofExpiresIn: req.proofExpiresIn,
            clientMetadata: req.clientMetadata,
            projectId: req.projectId,
          }),
        );
      },
      async getVerifiedUser(req) {
        const scope = requireScope(req.scope);
        if (!req.externalUserId || req.externalUserId.length > 255) throw new AppError("validation_error", "external_user_id must be 1 to 255 characters");
        const summary = await store.verifiedUser(scope, req.externalUserId);
        if (!summary) throw new AppError("not_found", "no verified user with this external_user_id");
        const verifications = await store.userVerifications(scope, [summary.external_user_id], DETAIL_STATUSES, clock.now());
        return { user: toVerifiedUsers([summary], verifications)[0] };
      },
    });
}
