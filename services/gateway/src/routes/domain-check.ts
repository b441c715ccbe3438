// The REST shape of a domain check (what each name server or URL showed, and why it failed),
// shared by the verification, domain and hosted-page routes.
import type { DomainCheck as DomainCheckMsg } from "@icv/contracts/gen/icv/verification/v1/verification_pb.ts";
import { iso } from "@icv/platform";
import { z } from "zod";
import { timestamp } from "../schemas.ts";

export const DomainCheck = z
  .object({
    passed: z.boolean().describe("On a verified domain: whether the record or file still stands"),
    reason: z
      .enum(["record_missing", "record_mismatch", "unreachable", "policy_refused"])
      .optional()
      .describe("Why it failed: no record there, other values, no server answered, or the owner's _icv policy excludes this issuer or tenant"),
    scheduled: z.boolean().optional().describe("true: a scheduled re-check (recheck_interval), not a call"),
    summary: z.string().describe("One sentence: what passed, or what was missing and where"),
    checked_at: timestamp,
    found: z
      .array(
        z.object({
          source: z
            .string()
            .describe(
              "The name server asked (`ns1.example.com (192.0.2.1:53)`), the URL fetched, `{provider} API`, or `_icv.{domain} at {name server}` for the owner's policy record",
            ),
          values: z.array(z.string()).describe("The TXT values it held, or the HTTP status and the first bytes of the body"),
          error: z.string().optional().describe("What went wrong there: timeout, NXDOMAIN, refused, redirect refused, …"),
          matched: z.boolean(),
        }),
      )
      .describe("What each server or URL showed"),
  })
  .meta({ id: "DomainCheck" });

/** RPC message → the REST last_check of a domain check. */
export function toRestCheck(c: DomainCheckMsg | undefined) {
  if (!c) return undefined;
  return {
    passed: c.passed,
    ...(c.reason ? { reason: c.reason as "record_missing" | "record_mismatch" | "unreachable" | "policy_refused" } : {}),
    ...(c.scheduled ? { scheduled: true } : {}),
    summary: c.summary,
    checked_at: iso(c.checkedAt)!,
    found: c.observations.map((o) => ({ source: o.source, values: o.found, ...(o.error ? { error: o.error } : {}), matched: o.matched })),
  };
}
