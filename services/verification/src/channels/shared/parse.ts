/** Zod schemas of the create options and submit evidence, and their refusals as the service's validation_error. */
import type { z } from "zod";
import { AppError, type ErrorDetail } from "@icv/platform";

/** A refusal with the exact message (and details, when given) the service answers; `parseWith` throws it as validation_error. */
export function fail(ctx: z.RefinementCtx, message: string, details?: ErrorDetail[]): void {
  ctx.addIssue({ code: "custom", message, params: { details } });
}

/** Parses `input` with `schema`; the first issue becomes validation_error (its message, its details). */
export function parseWith<T, I>(schema: z.ZodType<T, I>, input: I): T {
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const given = issue.code === "custom" ? (issue.params as { details?: ErrorDetail[] } | undefined)?.details : undefined;
  const details = issue.code === "custom" ? given : [{ field: issue.path.join("."), message: issue.message, code: issue.code }];
  throw new AppError("validation_error", issue.message, details ? { details } : {});
}
