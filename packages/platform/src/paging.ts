import { AppError } from "./errors.ts";

/** The most rows a list answers per page (DECISIONS.md). */
export const MAX_PAGE_LIMIT = 100;

/** A list RPC's page request (page 1 and limit 20 when unset), checked, with its row offset. */
export function pageRequest(p?: { page: number; limit: number }): { page: number; limit: number; offset: number } {
  const page = p?.page || 1;
  const limit = p?.limit || 20;
  if (page < 1 || limit < 1 || limit > MAX_PAGE_LIMIT) throw new AppError("validation_error", `page must be ≥ 1 and limit 1 to ${MAX_PAGE_LIMIT}`);
  return { page, limit, offset: (page - 1) * limit };
}

/** The pagination block of a list answer. */
export function pageInfo(page: number, limit: number, total: number) {
  const pages = Math.ceil(total / limit);
  return { page, limit, total, pages, hasMore: page < pages };
}
