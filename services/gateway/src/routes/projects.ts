import { z } from "zod";
import type { Client } from "@connectrpc/connect";
import type { ProjectService, MessageTemplate, Project, RenderedMessage } from "@icv/contracts/gen/icv/verification/v1/project_service_pb.ts";
import { iso, TEMPLATE_CHANNELS, TEMPLATE_TYPES } from "@icv/platform";
import { scopeOf } from "../clients.ts";
import { idOf, idParams } from "../input.ts";
import { route, type RouteDef } from "../registry.ts";
import { ErrorBody, PageQuery, Pagination, timestamp, toPagination } from "../schemas.ts";

const nullableText = (max: number) => z.string().min(1).max(max).nullable().optional();
const BrandingInput = z
  .object({
    business_name: nullableText(100).describe("Shown on the hosted page and in messages ({{business_name}})"),
    logo_url: nullableText(2048).describe("https only; the hosted page shows it through the gateway's logo proxy"),
    primary_color: nullableText(7).describe("#rgb or #rrggbb: the hosted page's accent colour"),
    support_email: nullableText(254).describe("Shown on the hosted page and in messages ({{support_email}})"),
  })
  .strict();
const CallbacksInput = z
  .object({
    success_url: nullableText(2048).describe("The default redirect_url of the project's verification requests"),
    failure_url: nullableText(2048).describe("Where the hosted page sends the user when the request expired"),
    cancel_url: nullableText(2048).describe("Where the hosted page sends the user when the request was cancelled"),
  })
  .strict();

const CreateProjectBody = z
  .object({
    name: z.string().min(1).max(100),
    description: nullableText(500),
    branding: BrandingInput.optional(),
    callbacks: CallbacksInput.optional(),
  })
  .strict()
  .meta({ id: "CreateProject" });
const UpdateProjectBody = z
  .object({
    name: z.string().min(1).max(100).optional(),
    description: nullableText(500),
    branding: BrandingInput.optional(),
    callbacks: CallbacksInput.optional(),
  })
  .strict()
  .describe("Members given are set (null clears one); members left out stay as they are")
  .meta({ id: "UpdateProject" });

const ProjectBody = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    branding: z.object({
      business_name: z.string().nullable(),
      logo_url: z.string().nullable(),
      primary_color: z.string().nullable(),
      support_email: z.string().nullable(),
    }),
    callbacks: z.object({ success_url: z.string().nullable(), failure_url: z.string().nullable(), cancel_url: z.string().nullable() }),
    is_default: z.boolean(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: "Project" });
const ProjectList = z.object({ data: z.array(ProjectBody), pagination: Pagination }).meta({ id: "ProjectList" });

const TemplateBody = z
  .object({
    project_id: z.string(),
    channel: z.enum(TEMPLATE_CHANNELS),
    type: z.enum(TEMPLATE_TYPES),
    body: z.string(),
    subject: z.string().nullable(),
    button_text: z.string().nullable(),
    is_active: z.boolean(),
    custom: z.boolean().describe("false: the built-in text (the project has no template of its own here)"),
    updated_at: timestamp.nullable(),
  })
  .meta({ id: "MessageTemplate" });
const TemplateList = z.object({ data: z.array(TemplateBody), pagination: Pagination }).meta({ id: "MessageTemplateList" });
const PutTemplateBody = z
  .object({
    body: z
      .string()
      .min(1)
      .max(2000)
      .describe("At most 2,000 characters; variables {{business_name}} {{code}} {{expires_in}} {{user_identifier}} {{channel}} {{support_email}}"),
    subject: z.string().min(1).max(200).optional().describe("Email only"),
    button_text: z.string().min(1).max(40).optional(),
    is_active: z.boolean().optional().describe("Default true; false keeps the template but sends the built-in text"),
  })
  .strict()
  .meta({ id: "PutMessageTemplate" });
const PreviewBody = z
  .object({
    channel: z.enum(TEMPLATE_CHANNELS),
    type: z.enum(TEMPLATE_TYPES),
    body: z.string().min(1).max(2000).optional().describe("Unset: the stored (or built-in) template"),
    subject: z.string().min(1).max(200).optional(),
  })
  .strict()
  .meta({ id: "PreviewMessageTemplate" });
const PreviewResult = z
  .object({ subject: z.string().nullable(), body: z.string(), html: z.string().nullable(), button_text: z.string().nullable() })
  .meta({ id: "RenderedMessage" });

const TemplateParams = z.object({ id: idOf("project"), channel: z.enum(TEMPLATE_CHANNELS), type: z.enum(TEMPLATE_TYPES) });
const ProjectIdParams = z.object({ id: idOf("project") });

export function toRestProject(p: Project) {
  return {
    id: p.id,
    name: p.name,
    description: p.description ?? null,
    branding: {
      business_name: p.branding?.businessName ?? null,
      logo_url: p.branding?.logoUrl ?? null,
      primary_color: p.branding?.primaryColor ?? null,
      support_email: p.branding?.supportEmail ?? null,
    },
    callbacks: {
      success_url: p.callbacks?.successUrl ?? null,
      failure_url: p.callbacks?.failureUrl ?? null,
      cancel_url: p.callbacks?.cancelUrl ?? null,
    },
    is_default: p.isDefault,
    created_at: iso(p.createdAt)!,
    updated_at: iso(p.updatedAt)!,
  };
}

const toRestTemplate = (t: MessageTemplate) => ({
  project_id: t.projectId,
  channel: t.channel as (typeof TEMPLATE_CHANNELS)[number],
  type: t.type as (typeof TEMPLATE_TYPES)[number],
  body: t.body,
  subject: t.subject ?? null,
  button_text: t.buttonText ?? null,
  is_active: t.isActive,
  custom: t.custom,
  updated_at: iso(t.updatedAt) ?? null,
});

const toRestRendered = (m: RenderedMessage | undefined) => ({
  subject: m?.subject ?? null,
  body: m?.text ?? "",
  html: m?.html ?? null,
  button_text: m?.buttonText ?? null,
});

type ProjectBodyIn = z.infer<typeof UpdateProjectBody>;

/** The REST body → ProjectInput and the names of the members it sets (PATCH: given members only; null clears). */
function projectInput(b: ProjectBodyIn) {
  const fields: string[] = [];
  const pick = (prefix: string, o: Record<string, string | null | undefined> | undefined) => {
    const out: Record<string, string | undefined> = {};
    for (const [k, v] of Object.entries(o ?? {})) {
      if (v === undefined) continue;
      fields.push(prefix + k);
      out[k.replace(/_(\w)/g, (_m, c: string) => c.toUpperCase())] = v ?? undefined;
    }
    return out;
  };
  const top = pick("", { name: b.name, description: b.description });
  const branding = pick("branding.", b.branding);
  const callbacks = pick("callbacks.", b.callbacks);
  return { input: { ...top, branding, callbacks }, fields };
}

const err = (description: string) => ({ description, schema: ErrorBody });
const TAG = "Projects and message templates";
const BASE = "/api/v1/me/projects";

export function projectRoutes(client: Client<typeof ProjectService>): RouteDef[] {
  const c = client;
  return [
    route({
      method: "get",
      path: BASE,
      tag: TAG,
      summary: "List the projects of this key's tenant and environment (the default project is made on first use)",
      description:
        "Projects hold a tenant's branding (hosted page name, logo, colours), default callbacks and message templates; verifications and requests name one with project_id, else the default project applies.",
      auth: "key",
      query: z.object(PageQuery).strict(),
      responses: { 200: { description: "A page of projects, the default first", schema: ProjectList }, 400: err("validation_error") },
      async handler({ req, query }) {
        const r = await c.listProjects({ scope: scopeOf(req), page: { page: query.page ?? 1, limit: query.limit ?? 20 } });
        return { body: { data: r.projects.map(toRestProject), pagination: toPagination(r.pageInfo!) } };
      },
    }),
    route({
      method: "post",
      path: BASE,
      tag: TAG,
      summary: "Create a project (branding and default callbacks)",
      description:
        "A new project in the key's tenant and environment, for a product or brand of its own: its hosted pages show its branding, and its message templates replace the built-in texts.",
      auth: "key",
      body: CreateProjectBody,
      responses: { 201: { description: "Created", schema: ProjectBody }, 400: err("validation_error") },
      async handler({ req, body }) {
        const r = await c.createProject({ scope: scopeOf(req), input: projectInput(body).input });
        return { status: 201, body: toRestProject(r.project!) };
      },
    }),
    route({
      method: "get",
      path: `${BASE}/{id}`,
      tag: TAG,
      summary: "Get a project",
      description: "One project of the key's tenant and environment, with its branding and callbacks.",
      auth: "key",
      params: idParams("project"),
      responses: { 200: { description: "The project", schema: ProjectBody }, 404: err("not_found") },
      async handler({ req, params }) {
        return { body: toRestProject((await c.getProject({ scope: scopeOf(req), id: params.id })).project!) };
      },
    }),
    route({
      method: "patch",
      path: `${BASE}/{id}`,
      tag: TAG,
      summary: "Update a project (members given are set; null clears one)",
      description: "Changes a project's name, branding or callbacks; members left out keep their values.",
      auth: "key",
      params: idParams("project"),
      body: UpdateProjectBody,
      responses: { 200: { description: "The project", schema: ProjectBody }, 400: err("validation_error"), 404: err("not_found") },
      async handler({ req, params, body }) {
        const { input, fields } = projectInput(body);
        const r = await c.updateProject({ scope: scopeOf(req), id: params.id, input, fields });
        return { body: toRestProject(r.project!) };
      },
    }),
    route({
      method: "delete",
      path: `${BASE}/{id}`,
      tag: TAG,
      summary: "Delete a project and its templates (not the default project)",
      description: "Deletes a project and its message templates; verifications and requests that named it fall back to the default project's branding.",
      auth: "key",
      params: idParams("project"),
      responses: {
        200: { description: "Deleted", schema: z.object({ success: z.literal(true) }) },
        404: err("not_found"),
        409: err("invalid_state: the default project"),
      },
      async handler({ req, params }) {
        await c.deleteProject({ scope: scopeOf(req), id: params.id });
        return { body: { success: true } };
      },
    }),
    route({
      method: "get",
      path: `${BASE}/{id}/templates`,
      tag: TAG,
      summary: "List the project's own message templates",
      description: "The templates this project replaced, by channel and type; the others use the built-in texts.",
      auth: "key",
      params: ProjectIdParams,
      responses: { 200: { description: "The project's templates", schema: TemplateList }, 404: err("not_found") },
      async handler({ req, params }) {
        const r = await c.listTemplates({ scope: scopeOf(req), projectId: params.id });
        const n = r.templates.length;
        return {
          body: { data: r.templates.map(toRestTemplate), pagination: toPagination({ page: 1, limit: 100, total: n, pages: n ? 1 : 0, hasMore: false }) },
        };
      },
    }),
    route({
      method: "post",
      path: `${BASE}/{id}/templates/preview`,
      tag: TAG,
      summary: "Render a template with sample values (the given body, else the stored or built-in one)",
      description:
        "Shows what a message would say: renders the given template body, or the project's stored or built-in one, with sample values for its placeholders.",
      auth: "key",
      params: ProjectIdParams,
      body: PreviewBody,
      responses: {
        200: { description: "The rendered message", schema: PreviewResult },
        400: err("validation_error"),
        404: err("not_found"),
      },
      async handler({ req, params, body }) {
        const r = await c.previewTemplate({
          scope: scopeOf(req),
          projectId: params.id,
          channel: body.channel,
          type: body.type,
          body: body.body,
          subject: body.subject,
        });
        return { body: toRestRendered(r.message) };
      },
    }),
    route({
      method: "get",
      path: `${BASE}/{id}/templates/{channel}/{type}`,
      tag: TAG,
      summary: "Get the project's template for a channel and type (the built-in text when it has none: custom false)",
      description: "The text the project sends for this channel and message type; custom false when it is the built-in one.",
      auth: "key",
      params: TemplateParams,
      responses: { 200: { description: "The template", schema: TemplateBody }, 400: err("validation_error"), 404: err("not_found") },
      async handler({ req, params }) {
        const r = await c.getTemplate({ scope: scopeOf(req), projectId: params.id, channel: params.channel, type: params.type });
        return { body: toRestTemplate(r.template!) };
      },
    }),
    route({
      method: "put",
      path: `${BASE}/{id}/templates/{channel}/{type}`,
      tag: TAG,
      summary: "Set the project's template for a channel and type",
      description:
        "Unknown variables, a *_request body without {{code}}, a body over 2,000 characters or a subject on a non-email channel are validation_error. " +
        "Email renders HTML-escaped; the other channels plain text.",
      auth: "key",
      params: TemplateParams,
      body: PutTemplateBody,
      responses: { 200: { description: "The template", schema: TemplateBody }, 400: err("validation_error"), 404: err("not_found") },
      async handler({ req, params, body }) {
        const r = await c.putTemplate({
          scope: scopeOf(req),
          projectId: params.id,
          channel: params.channel,
          type: params.type,
          body: body.body,
          subject: body.subject,
          buttonText: body.button_text,
          isActive: body.is_active,
        });
        return { body: toRestTemplate(r.template!) };
      },
    }),
    route({
      method: "delete",
      path: `${BASE}/{id}/templates/{channel}/{type}`,
      tag: TAG,
      summary: "Delete the project's template (messages return to the built-in text)",
      description: "Removes the project's own text for this channel and type; messages use the built-in text again.",
      auth: "key",
      params: TemplateParams,
      responses: { 200: { description: "Deleted", schema: z.object({ success: z.literal(true) }) }, 404: err("not_found") },
      async handler({ req, params }) {
        await c.deleteTemplate({ scope: scopeOf(req), projectId: params.id, channel: params.channel, type: params.type });
        return { body: { success: true } };
      },
    }),
  ];
}
