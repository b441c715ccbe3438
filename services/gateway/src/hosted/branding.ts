/**
 * The hosted pages' branding partial (REST side): the project's branding, its logo behind our logo
 * proxy; without a business name, the tenant's name (set at `tenant create --name`), so the page
 * always says who is asking.
 */
import { z } from "zod";
import type { HostedBranding as BrandingMsg } from "@icv/contracts/gen/icv/verification/v1/verification_request_service_pb.ts";
import { logoPath } from "./logo.ts";

export const HostedBranding = z
  .object({
    business_name: z.string().nullable().describe("The project's business name, else the tenant's name"),
    logo_url: z.string().nullable().describe("Same-origin path of the logo proxy (/hosted/logo/{project_id})"),
    primary_color: z.string().nullable(),
    support_email: z.string().nullable(),
  })
  .meta({ id: "HostedBranding" });

export function brandingBody(b: BrandingMsg | undefined, tenantName?: string) {
  if (!b && !tenantName) return null;
  return {
    business_name: b?.businessName || tenantName || null,
    logo_url: b?.logoUrl ? logoPath(b.projectId) : null,
    primary_color: b?.primaryColor ?? null,
    support_email: b?.supportEmail ?? null,
  };
}

/** A tenant's name by id, remembered (tenants are never renamed); undefined for an unknown id. */
export function tenantNames(lookup: (id: string) => Promise<string | undefined>): (id: string) => Promise<string | undefined> {
  const known = new Map<string, string>();
  return async (id) => {
    if (!id) return undefined;
    let name = known.get(id);
    if (name === undefined) {
      name = await lookup(id);
      if (name !== undefined && known.size < 10_000) known.set(id, name);
    }
    return name;
  };
}
