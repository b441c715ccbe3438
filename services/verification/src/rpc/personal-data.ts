// Redact, user-wide redaction, export and retention (verifications/redact.ts): thin handlers.
import type { TenantScope } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { AppError, isId, requireScope, ts } from "@icv/platform";
import type { UseCaseDeps } from "../verifications/deps.ts";
import { exportUser, redact, setRetention } from "../verifications/redact.ts";
import { toMessage } from "./convert.ts";

/** External user ids as the create call accepts them (1 to 255 characters). */
const userId = (id: string) => {
  if (!id || id.length > 255)
    throw new AppError("validation_error", "external_user_id must be 1 to 255 characters", {
      details: [{ field: "external_user_id", message: "1 to 255 characters", code: "invalid_length" }],
    });
  return id;
};

/** The personal-data handlers of VerificationService. */
export function personalDataHandlers(verifications: UseCaseDeps) {
  return {
    async redactVerification(req: { scope?: TenantScope; id: string; revokeProofs: boolean }) {
      const scope = requireScope(req.scope);
      if (!isId("verification", req.id)) throw new AppError("not_found", "verification not found");
      return redact(verifications, scope, { id: req.id }, req.revokeProofs);
    },
    async redactUser(req: { scope?: TenantScope; externalUserId: string; revokeProofs: boolean }) {
      return redact(verifications, requireScope(req.scope), { externalUserId: userId(req.externalUserId) }, req.revokeProofs);
    },
    async exportUser(req: { scope?: TenantScope; externalUserId: string }) {
      const { rows, memberships } = await exportUser(verifications, requireScope(req.scope), userId(req.externalUserId));
      return {
        verifications: rows.map((row) => toMessage({ row })),
        requests: memberships.map((m) => ({
          requestId: m.request_id,
          verificationId: m.verification_id,
          assetIndex: m.idx,
          status: m.status,
          createdAt: ts(m.created_at),
        })),
      };
    },
    async getRetention(req: { scope?: TenantScope }) {
      return { retentionDays: await verifications.store.redaction.retention(requireScope(req.scope)) };
    },
    async setRetention(req: { scope?: TenantScope; retentionDays: number }) {
      return { retentionDays: await setRetention(verifications, requireScope(req.scope), req.retentionDays) };
    },
  };
}
