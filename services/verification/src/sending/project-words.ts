import type { Scope } from "@icv/platform";
import type { ProjectRow, ProjectStore } from "../store/projects.ts";
import { renderTemplate, type Rendered, type Variables } from "./templates.ts";

/** The variables a project gives every message: its business name and support address. */
export const brandVariables = (p: ProjectRow | undefined): Variables => ({
  business_name: p?.business_name ?? "",
  support_email: p?.support_email ?? "",
});

/**
 * The project's (`projectId`, else the scope's default) active template for a channel and type,
 * rendered (absent: use the built-in text), and the project's business name (for the branding
 * of a built-in text).
 */
export async function projectMessage(
  store: ProjectStore | undefined,
  scope: Scope,
  projectId: string | null,
  channel: string,
  type: string,
  vars: Variables,
): Promise<{ rendered?: Rendered; businessName?: string }> {
  const found = await store?.forMessage(scope, projectId, channel, type);
  if (!found) return {};
  const p = found.project;
  const businessName = p.business_name ?? undefined;
  if (!found.template) return { businessName };
  const all: Variables = { ...brandVariables(p), channel, ...vars };
  return {
    rendered: renderTemplate(channel, found.template, all, {
      businessName: p.business_name,
      primaryColor: p.primary_color,
      supportEmail: p.support_email,
    }),
    businessName,
  };
}
