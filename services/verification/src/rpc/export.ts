// ExportVerifications: internal teams read a tenant's verifications in bulk over gRPC, a batch at a
// time, with a keyset cursor (the read: store/export.ts).
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { TenantScope } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { AppError, requireScope, toDate, type Database } from "@icv/platform";
import { badCursor, exportVerifications } from "../store/export.ts";
import { toMessage } from "./convert.ts";

const MAX = 1000;

interface ExportRequest {
  scope?: TenantScope;
  createdAfter?: Timestamp;
  createdBefore?: Timestamp;
  status?: string;
  type?: string;
  limit: number;
  cursor: string;
}

/** The ExportVerifications handler of VerificationService. */
export function exportHandlers(db: Database) {
  return {
    async exportVerifications(req: ExportRequest) {
      const scope = requireScope(req.scope);
      if (req.limit < 0 || req.limit > MAX)
        throw new AppError("validation_error", `limit must be between 1 and ${MAX}`, {
          details: [{ field: "limit", message: `1 to ${MAX} (0: the default, 100)`, code: "too_big" }],
        });
      if (req.cursor.length > 512) throw badCursor();
      const f = { createdAfter: toDate(req.createdAfter), createdBefore: toDate(req.createdBefore), status: req.status, type: req.type };
      const { rows, next } = await exportVerifications(db, scope, f, req.limit || 100, req.cursor);
      return { verifications: rows.map((row) => toMessage({ row })), nextCursor: next };
    },
  };
}
