import type { ConnectRouter } from "@connectrpc/connect";
import {
  ProjectService,
  type MessageTemplate,
  type Project,
  type ProjectInput,
  type RenderedMessage,
} from "@icv/contracts/gen/icv/verification/v1/project_service_pb.ts";
import { AppError, isId, pageInfo, pageRequest, requireScope, ts } from "@icv/platform";
import type { Projects, TemplateView } from "../projects/projects.ts";
import type { Rendered, Variables } from "../sending/templates.ts";
import type { ProjectField, ProjectRow } from "../store/projects.ts";

type Init<T> = Omit<T, "$typeName" | "$unknown">;

function toProject(p: ProjectRow): Init<Project> {
  return {
    id: p.id,
    name: p.name,
    description: p.description ?? undefined,
    branding: {
      $typeName: "icv.verification.v1.Branding",
      businessName: p.business_name ?? undefined,
      logoUrl: p.logo_url ?? undefined,
      primaryColor: p.primary_color ?? undefined,
      supportEmail: p.support_email ?? undefined,
    },
    callbacks: {
      $typeName: "icv.verification.v1.Callbacks",
      successUrl: p.success_url ?? undefined,
      failureUrl: p.failure_url ?? undefined,
      cancelUrl: p.cancel_url ?? undefined,
    },
    isDefault: p.is_default,
    createdAt: ts(p.created_at),
    updatedAt: ts(p.updated_at),
  };
}

function toTemplate(t: TemplateView): Init<MessageTemplate> {
  return {
    projectId: t.project_id,
    channel: t.channel,
    type: t.type,
    body: t.body,
    subject: t.subject ?? undefined,
    buttonText: t.button_text ?? undefined,
    isActive: t.is_active,
    custom: t.custom,
    updatedAt: ts(t.updated_at),
  };
}

const toRendered = (r: Rendered): Init<RenderedMessage> => ({ subject: r.subject, text: r.text, html: r.html, buttonText: r.buttonText });

/** ProjectInput (flat names as the store has them). */
function inputOf(i: ProjectInput | undefined): Partial<Record<ProjectField, string>> {
  return {
    name: i?.name,
    description: i?.description,
    business_name: i?.branding?.businessName,
    logo_url: i?.branding?.logoUrl,
    primary_color: i?.branding?.primaryColor,
    support_email: i?.branding?.supportEmail,
    success_url: i?.callbacks?.successUrl,
    failure_url: i?.callbacks?.failureUrl,
    cancel_url: i?.callbacks?.cancelUrl,
  };
}

/** Update field names as the contract names them (branding.logo_url) → the store's (logo_url). */
const fieldOf = (f: string) => f.replace(/^(branding|callbacks)\./, "");

/** A project id in a path: malformed answers not_found like an unknown one. */
function projectId(id: string): string {
  if (!isId("project", id)) throw new AppError("not_found", "project not found");
  return id;
}

export function projectRoutes(projects: Projects) {
  return (router: ConnectRouter) =>
    router.service(ProjectService, {
      async listProjects(req) {
        const { page, limit } = pageRequest(req.page);
        const { rows, total } = await projects.list(requireScope(req.scope), page, limit);
        return { projects: rows.map(toProject), pageInfo: pageInfo(page, limit, total) };
      },
      async createProject(req) {
        return { project: toProject(await projects.create(requireScope(req.scope), inputOf(req.input))) };
      },
      async getProject(req) {
        return { project: toProject(await projects.get(requireScope(req.scope), projectId(req.id))) };
      },
      async updateProject(req) {
        return {
          project: toProject(await projects.update(requireScope(req.scope), projectId(req.id), inputOf(req.input), req.fields.map(fieldOf))),
        };
      },
      async deleteProject(req) {
        await projects.delete(requireScope(req.scope), projectId(req.id));
        return {};
      },
      async listTemplates(req) {
        return { templates: (await projects.templates(requireScope(req.scope), projectId(req.projectId))).map(toTemplate) };
      },
      async getTemplate(req) {
        return { template: toTemplate(await projects.template(requireScope(req.scope), projectId(req.projectId), req.channel, req.type)) };
      },
      async putTemplate(req) {
        const r = await projects.putTemplate(requireScope(req.scope), projectId(req.projectId), req.channel, req.type, {
          body: req.body,
          subject: req.subject,
          buttonText: req.buttonText,
          isActive: req.isActive,
        });
        return { template: toTemplate(r.template), created: r.created };
      },
      async deleteTemplate(req) {
        await projects.deleteTemplate(requireScope(req.scope), projectId(req.projectId), req.channel, req.type);
        return {};
      },
      async previewTemplate(req) {
        const r = await projects.preview(requireScope(req.scope), projectId(req.projectId), req.channel, req.type, {
          body: req.body,
          subject: req.subject,
        });
        return { message: toRendered(r) };
      },
      async renderMessage(req) {
        const r = await projects.render(requireScope(req.scope), req.projectId ?? null, req.channel, req.type, req.variables as Variables);
        return r.rendered ? { found: true, message: toRendered(r.rendered), businessName: r.businessName } : { found: false, businessName: r.businessName };
      },
      async getProjectLogo(req) {
        return { logoUrl: isId("project", req.projectId) ? await projects.logoUrl(req.projectId) : undefined };
      },
    });
}
