// The REST shape of a domain check (what each name server or URL showed), shared by the
// verification, domain and hosted-page routes.
import type { DomainCheck as DomainCheckMsg } from "@icv/contracts/gen/icv/verification/v1/verification_pb.ts";
import { iso } from "@icv/platform";
import { z } from "zod";
import { timestamp } from "../schemas.ts";

export const DomainCheck = z
  .object({
    passed: z.boolean().describe("On a verified domain: whether the record or file still stands"),
    summary: z.string().describe("One sentence: what passed, or what was missing and where"),
    checked_at: timestamp,
    found: z
      .array(
        z.object({
          source: z.string().describe("The name server asked (`ns1.example.com (192.0.2.1:53)`), the URL fetched, or `{provider} API`"),
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
    summary: c.summary,
    checked_at: iso(c.checkedAt)!,
    found: c.observations.map((o) => ({ source: o.source, values: o.found, ...(o.error ? { error: o.error } : {}), matched: o.matched })),
  };
}
