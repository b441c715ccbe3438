// The keyset-paged read behind ExportVerifications (rpc/export.ts): a tenant's verifications a batch
// at a time, with a cursor (created_at in microseconds, then id) instead of pages that shift as rows
// are added. One indexed range scan per batch (verifications_tenant_created).
import { createHash } from "node:crypto";
import { AppError, type Database, type Scope } from "@icv/platform";
import type { VerificationRow } from "./rows.ts";

const S = "verification";
export interface ExportFilter {
  createdAfter?: Date;
  createdBefore?: Date;
  status?: string;
  type?: string;
}

/** Ties a cursor to the scope and filters it was made for (a cursor reused with others is refused). */
function filterTag(scope: Scope, f: ExportFilter): string {
  const key = [scope.tenantId, scope.env, f.createdAfter?.toISOString(), f.createdBefore?.toISOString(), f.status, f.type].join("\u0000");
  return createHash("sha256").update(key).digest("base64url").slice(0, 12);
}

export const badCursor = () =>
  new AppError("validation_error", "cursor is not one this RPC made for these filters", {
    details: [
      { field: "cursor", message: "start again without a cursor, or pass the previous answer's next_cursor with the same filters", code: "invalid_cursor" },
    ],
  });

function readCursor(cursor: string, tag: string): { us: string; id: string } {
  const [t, us, id] = Buffer.from(cursor, "base64url").toString("utf8").split("|");
  if (t !== tag || !/^\d{1,20}$/.test(us ?? "") || !/^ver_[0-9A-Za-z]{1,64}$/.test(id ?? "")) throw badCursor();
  return { us, id };
}

/** A batch of the scope's verifications oldest first, and the cursor of the next one ("" at the end). */
export async function exportVerifications(
  db: Database,
  scope: Scope,
  f: ExportFilter,
  limit: number,
  cursor: string,
): Promise<{ rows: VerificationRow[]; next: string }> {
  const tag = filterTag(scope, f);
  const where = ["tenant_id = $1", "environment = $2"];
  const params: unknown[] = [scope.tenantId, scope.env];
  const add = (cond: string, ...values: unknown[]) => {
    let c = cond;
    for (const v of values) {
      params.push(v);
      c = c.replace("?", `$${params.length}`);
    }
    where.push(c);
  };
  if (f.createdAfter) add("created_at >= ?", f.createdAfter);
  if (f.createdBefore) add("created_at < ?", f.createdBefore);
  if (f.status) add("status = ?", f.status);
  if (f.type) add("type = ?", f.type);
  if (cursor) {
    const at = readCursor(cursor, tag);
    add("(created_at, id) > (timestamptz 'epoch' + ?::bigint * interval '1 microsecond', ?)", at.us, at.id);
  }
  const r = await db.query<VerificationRow & { created_us: string }>(
    `SELECT *, (extract(epoch FROM created_at) * 1000000)::bigint::text AS created_us
       FROM ${S}.verifications WHERE ${where.join(" AND ")}
      ORDER BY created_at, id LIMIT ${limit + 1}`,
    params,
  );
  const rows = r.rows.slice(0, limit);
  const last = rows.at(-1);
  const next = r.rows.length > limit && last ? Buffer.from(`${tag}|${last.created_us}|${last.id}`).toString("base64url") : "";
  return { rows, next };
}
