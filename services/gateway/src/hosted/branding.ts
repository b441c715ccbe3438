/** The hosted page's branding partial (REST side): the request's project branding, its logo behind our logo proxy. */
import { z } from "zod";
import type { HostedBranding as BrandingMsg } from "@icv/contracts/gen/icv/verification/v1/verification_request_service_pb.ts";
import { logoPath } from "./logo.ts";

export const HostedBranding = z
  .object({
    business_name: z.string().nullable(),
    logo_url: z.string().nullable().describe("Same-origin path of the logo proxy (/hosted/logo/{project_id})"),
    primary_color: z.string().nullable(),
    support_email: z.string().nullable(),
  })
  .meta({ id: "HostedBranding" });

export function brandingBody(b: BrandingMsg | undefined) {
  if (!b) return null;
  return {
    business_name: b.businessName ?? null,
    logo_url: b.logoUrl ? logoPath(b.projectId) : null,
    primary_color: b.primaryColor ?? null,
    support_email: b.supportEmail ?? null,
  };
}
