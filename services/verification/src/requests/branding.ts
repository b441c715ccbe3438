/** The hosted page's branding partial: what a request's project shows, and where its callbacks send the user. */
import type { ProjectRow } from "../store/projects.ts";
import type { RequestView } from "../store/rows.ts";

export interface HostedBranding {
  projectId: string;
  businessName?: string;
  logoUrl?: string;
  primaryColor?: string;
  supportEmail?: string;
}

/** The project's branding for the page (undefined when the tenant has no project yet). */
export function brandingOf(p: ProjectRow | undefined): HostedBranding | undefined {
  if (!p) return undefined;
  return {
    projectId: p.id,
    businessName: p.business_name ?? undefined,
    logoUrl: p.logo_url ?? undefined,
    primaryColor: p.primary_color ?? undefined,
    supportEmail: p.support_email ?? undefined,
  };
}

/**
 * Where the page sends the user once the request settled: the request's redirect_url (which
 * defaults to the project's success_url), except that an expired request goes to the project's
 * failure_url and a cancelled one to its cancel_url when the request named no redirect_url of its own
 * other than the project's default.
 */
export function outcomeRedirect(r: RequestView, p: ProjectRow | undefined, fromRequest: string | undefined): string | undefined {
  const own = r.redirect_url && r.redirect_url !== p?.success_url;
  const other = r.status === "expired" ? p?.failure_url : r.status === "cancelled" ? p?.cancel_url : undefined;
  if (own || !other) return fromRequest;
  const url = new URL(other);
  url.searchParams.set("request_id", r.id);
  url.searchParams.set("status", r.status);
  return url.toString();
}
