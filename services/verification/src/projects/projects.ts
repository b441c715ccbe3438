/** Projects and their message templates: the use cases behind /api/v1/me/projects (ProjectService). */
import { AppError, checkTargetUrl, isId, newId, OutboundError, type Clock, type Resolver, type Scope } from "@icv/platform";
import type { ProjectField, ProjectRow, ProjectStore, ProjectValues, TemplateRow } from "../store/projects.ts";
import { projectValues } from "./input.ts";
import { SAMPLE, TEXTS, checkChannelType, checkTemplate, renderTemplate, type Rendered, type Variables } from "../sending/templates.ts";
import type { TemplateChannel, TemplateType } from "@icv/platform";

import { brandVariables, projectMessage } from "../sending/project-words.ts";

/** A template as the API shows it: the project's own, or the built-in text (custom false). */
export type TemplateView = Omit<TemplateRow, "created_at" | "updated_at"> & { custom: boolean; updated_at: Date | null };

export interface PutTemplateInput {
  body: string;
  subject?: string;
  buttonText?: string;
  isActive?: boolean;
}

/** The project named in a create body, checked: another scope's or an unknown project is validation_error (the same answer, no oracle). */
export async function resolveProjectId(projects: ProjectStore, scope: Scope, id: string | undefined): Promise<string | null> {
  if (id === undefined) return null;
  const p = isId("project", id) ? await projects.get(scope, id) : undefined;
  if (!p)
    throw new AppError("validation_error", "project_id: no such project", {
      details: [{ field: "project_id", message: "no such project", code: "not_found" }],
    });
  return p.id;
}

export interface ProjectsDeps {
  store: ProjectStore;
  clock: Clock;
  /** The outbound rules the logo proxy fetches logo_url with (default: private targets refused). */
  logoTargets?: { allowPrivate: boolean; resolver?: Resolver };
}

export class Projects {
  constructor(private readonly d: ProjectsDeps) {}

  /**
   * A logo_url is fetched by the logo proxy: one at a loopback, private, link-local or metadata
   * address (a literal in any form, or a name resolving to one) is refused when saved, by the rules
   * the fetch applies. A name that resolves to nothing yet is kept (the fetch checks it again).
   */
  private async checkLogo(values: ProjectValues): Promise<void> {
    if (!values.logo_url) return;
    try {
      await checkTargetUrl(values.logo_url, {
        allowPrivate: this.d.logoTargets?.allowPrivate ?? false,
        resolver: this.d.logoTargets?.resolver,
        allowUnresolved: true,
      });
    } catch (e) {
      if (!(e instanceof OutboundError)) throw e;
      const message = e.message;
      throw new AppError("validation_error", `branding.logo_url: ${message}`, { details: [{ field: "branding.logo_url", message, code: "invalid" }] });
    }
  }

  private now = () => this.d.clock.now();

  async list(scope: Scope, page: number, limit: number): Promise<{ rows: ProjectRow[]; total: number }> {
    await this.d.store.ensureDefault(scope, newId("project", this.now().getTime()), this.now());
    return this.d.store.list(scope, limit, (page - 1) * limit);
  }

  async create(scope: Scope, input: Partial<Record<ProjectField, string>>): Promise<ProjectRow> {
    if (input.name === undefined)
      throw new AppError("validation_error", "name is required", { details: [{ field: "name", message: "required", code: "required" }] });
    // the default project exists before any other (so "first use" is never a second project)
    await this.d.store.ensureDefault(scope, newId("project", this.now().getTime()), this.now());
    const values = projectValues(input) as ProjectValues & { name: string };
    await this.checkLogo(values);
    return this.d.store.insert(scope, newId("project", this.now().getTime()), values, this.now());
  }

  async get(scope: Scope, id: string): Promise<ProjectRow> {
    const p = await this.d.store.get(scope, id);
    if (!p) throw new AppError("not_found", "project not found");
    return p;
  }

  async update(scope: Scope, id: string, input: Partial<Record<ProjectField, string>>, fields: readonly string[]): Promise<ProjectRow> {
    const values = projectValues(input, fields);
    await this.checkLogo(values);
    const p = Object.keys(values).length ? await this.d.store.update(scope, id, values, this.now()) : await this.d.store.get(scope, id);
    if (!p) throw new AppError("not_found", "project not found");
    return p;
  }

  async delete(scope: Scope, id: string): Promise<void> {
    const r = await this.d.store.delete(scope, id);
    if (!r) throw new AppError("not_found", "project not found");
    if (r === "default") throw new AppError("invalid_state", "the default project cannot be deleted");
  }

  async templates(scope: Scope, projectId: string): Promise<TemplateView[]> {
    await this.get(scope, projectId);
    return (await this.d.store.templates(projectId)).map((t) => ({ ...t, custom: true }));
  }

  async template(scope: Scope, projectId: string, channel: string, type: string): Promise<TemplateView> {
    const ct = checkChannelType(channel, type);
    await this.get(scope, projectId);
    const t = await this.d.store.template(projectId, ct.channel, ct.type);
    return t ? { ...t, custom: true } : builtIn(projectId, ct.channel, ct.type);
  }

  async putTemplate(
    scope: Scope,
    projectId: string,
    channel: string,
    type: string,
    input: PutTemplateInput,
  ): Promise<{ template: TemplateView; created: boolean }> {
    const ct = checkChannelType(channel, type);
    checkTemplate(ct.channel, ct.type, input);
    await this.get(scope, projectId);
    const { row, created } = await this.d.store.putTemplate(
      {
        project_id: projectId,
        channel: ct.channel,
        type: ct.type,
        body: input.body,
        subject: input.subject ?? null,
        button_text: input.buttonText ?? null,
        is_active: input.isActive ?? true,
      },
      this.now(),
    );
    return { template: { ...row, custom: true }, created };
  }

  async deleteTemplate(scope: Scope, projectId: string, channel: string, type: string): Promise<void> {
    const ct = checkChannelType(channel, type);
    await this.get(scope, projectId);
    if (!(await this.d.store.deleteTemplate(projectId, ct.channel, ct.type)))
      throw new AppError("not_found", "the project has no template for this channel and type");
  }

  /** Renders the given text (checked like PUT), else the stored or built-in template, with sample values and the project's branding. */
  async preview(scope: Scope, projectId: string, channel: string, type: string, given: { body?: string; subject?: string }): Promise<Rendered> {
    const ct = checkChannelType(channel, type);
    const p = await this.get(scope, projectId);
    let t: { body: string; subject?: string | null; button_text?: string | null };
    if (given.body !== undefined) {
      checkTemplate(ct.channel, ct.type, { body: given.body, subject: given.subject });
      t = { body: given.body, subject: given.subject };
    } else t = await this.template(scope, projectId, ct.channel, ct.type);
    const vars: Variables = { ...SAMPLE, ...brandVariables(p), channel: ct.channel };
    return renderTemplate(ct.channel, t, vars, {
      businessName: p.business_name,
      primaryColor: p.primary_color,
      supportEmail: p.support_email,
    });
  }

  /** A message from the project's active template (`projectId`, else the default project; rendered absent: use the built-in text), and the project's business name. */
  async render(
    scope: Scope,
    projectId: string | null,
    channel: string,
    type: string,
    vars: Variables,
  ): Promise<{ rendered?: Rendered; businessName?: string }> {
    if (projectId !== null && !isId("project", projectId)) return {};
    return projectMessage(this.d.store, scope, projectId, channel, type, vars);
  }

  async logoUrl(projectId: string): Promise<string | undefined> {
    return (await this.d.store.byId(projectId))?.logo_url ?? undefined;
  }
}

function builtIn(projectId: string, channel: TemplateChannel, type: TemplateType): TemplateView {
  return {
    project_id: projectId,
    channel,
    type,
    body: TEXTS.builtIn[type],
    subject: channel === "email" ? TEXTS.defaultSubject : null,
    button_text: null,
    is_active: true,
    custom: false,
    updated_at: null,
  };
}
