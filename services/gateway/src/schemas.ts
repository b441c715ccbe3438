import { z } from "zod";

/**
 * The REST shapes every resource shares (errors, pagination, timestamps). Each route file in
 * routes/ holds its own request and response schemas beside its handlers; together they
 * generate /api/openapi.json.
 */

export const ASSET_TYPES = ["phone", "email", "domain", "social", "wallet", "account", "telegram_bot"] as const;

export const timestamp = z.string().describe("ISO 8601 UTC timestamp with milliseconds");

export const ErrorBody = z
  .object({
    error: z.object({
      code: z.string(),
      message: z.string(),
      details: z.array(z.object({ field: z.string(), message: z.string(), code: z.string() })).optional(),
      request_id: z.string(),
    }),
  })
  .meta({ id: "Error" });

export const Pagination = z
  .object({
    page: z.number().int(),
    limit: z.number().int(),
    total: z.number().int(),
    pages: z.number().int(),
    hasMore: z.boolean().describe("the spec's name; has_more is the same value"),
    has_more: z.boolean(),
  })
  .meta({ id: "Pagination" });

/** The REST pagination block of an RPC's page info: the spec's camelCase hasMore and, beside it, has_more. */
export const toPagination = (p: { page: number; limit: number; total: number; pages: number; hasMore: boolean }) => ({
  page: p.page,
  limit: p.limit,
  total: p.total,
  pages: p.pages,
  hasMore: p.hasMore,
  has_more: p.hasMore,
});

const intParam = (name: string, min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, `${name} must be a whole number`)
    .transform(Number)
    .pipe(z.number().int().min(min, `${name} must be at least ${min}`).max(max, `${name} must be at most ${max}`));

export const PageQuery = {
  page: intParam("page", 1, 1_000_000).optional(),
  limit: intParam("limit", 1, 100).optional(),
};

export const jsonObject = z.record(z.string(), z.unknown());

/** The project a verification, request or session uses, as the answers show it (left out when none was given). */
export const projectIdShown = z
  .string()
  .optional()
  .describe("The project given at create (a verification made by a request or a session: theirs); absent: the tenant environment's default project");
