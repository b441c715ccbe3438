import type { Database, Scope } from "@icv/platform";

const S = "verification";

export interface ProjectRow {
  id: string;
  tenant_id: string;
  environment: "live" | "test";
  name: string;
  description: string | null;
  business_name: string | null;
  logo_url: string | null;
  primary_color: string | null;
  support_email: string | null;
  success_url: string | null;
  failure_url: string | null;
  cancel_url: string | null;
  is_default: boolean;
  created_at: Date;
  updated_at: Date;
}

/** The members of a project a tenant sets (everything but ids, scope, default flag and times). */
export const PROJECT_FIELDS = [
  "name",
  "description",
  "business_name",
  "logo_url",
  "primary_color",
  "support_email",
  "success_url",
  "failure_url",
  "cancel_url",
] as const;
export type ProjectField = (typeof PROJECT_FIELDS)[number];
export type ProjectValues = Partial<Record<ProjectField, string | null>>;

export interface TemplateRow {
  project_id: string;
  channel: string;
  type: string;
  body: string;
  subject: string | null;
  button_text: string | null;
  is_active: boolean;
  created_at: Date;
  updated_at: Date;
}

/** A project (the given one, else the scope's default) with its template of one channel and type, if any. */
export interface ProjectWithTemplate {
  project: ProjectRow;
  template?: TemplateRow;
}

/** Projects and their message templates: the only SQL of the project aggregate. */
export class ProjectStore {
  constructor(private readonly db: Database) {}

  /** The scope's default project, made now if it has none (a race makes one: the partial unique index). */
  async ensureDefault(scope: Scope, id: string, now: Date): Promise<ProjectRow> {
    await this.db.query(
      `INSERT INTO ${S}.projects (id, tenant_id, environment, name, is_default, created_at, updated_at)
       VALUES ($1, $2, $3, 'Default project', true, $4, $4) ON CONFLICT DO NOTHING`,
      [id, scope.tenantId, scope.env, now],
    );
    const r = await this.db.query<ProjectRow>(`SELECT * FROM ${S}.projects WHERE tenant_id = $1 AND environment = $2 AND is_default`, [
      scope.tenantId,
      scope.env,
    ]);
    return r.rows[0];
  }

  async insert(scope: Scope, id: string, v: ProjectValues & { name: string }, now: Date): Promise<ProjectRow> {
    const r = await this.db.query<ProjectRow>(
      `INSERT INTO ${S}.projects (id, tenant_id, environment, name, description, business_name, logo_url, primary_color, support_email,
         success_url, failure_url, cancel_url, is_default, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, false, $13, $13) RETURNING *`,
      [
        id,
        scope.tenantId,
        scope.env,
        v.name,
        v.description ?? null,
        v.business_name ?? null,
        v.logo_url ?? null,
        v.primary_color ?? null,
        v.support_email ?? null,
        v.success_url ?? null,
        v.failure_url ?? null,
        v.cancel_url ?? null,
        now,
      ],
    );
    return r.rows[0];
  }

  async get(scope: Scope, id: string): Promise<ProjectRow | undefined> {
    const r = await this.db.query<ProjectRow>(`SELECT * FROM ${S}.projects WHERE id = $1 AND tenant_id = $2 AND environment = $3`, [
      id,
      scope.tenantId,
      scope.env,
    ]);
    return r.rows[0];
  }

  /** The project a verification or request names, else the scope's default (undefined when it has none yet). */
  async effective(scope: Scope, projectId: string | null): Promise<ProjectRow | undefined> {
    const r = await this.db.query<ProjectRow>(
      `SELECT * FROM ${S}.projects WHERE tenant_id = $1 AND environment = $2 AND (($3::text IS NOT NULL AND id = $3) OR ($3::text IS NULL AND is_default))`,
      [scope.tenantId, scope.env, projectId],
    );
    return r.rows[0];
  }

  /** Any project by id (the public logo proxy: a logo is public). */
  async byId(id: string): Promise<ProjectRow | undefined> {
    return (await this.db.query<ProjectRow>(`SELECT * FROM ${S}.projects WHERE id = $1`, [id])).rows[0];
  }

  async list(scope: Scope, limit: number, offset: number): Promise<{ rows: ProjectRow[]; total: number }> {
    const params = [scope.tenantId, scope.env];
    const [rows, count] = await Promise.all([
      this.db.query<ProjectRow>(
        `SELECT * FROM ${S}.projects WHERE tenant_id = $1 AND environment = $2 ORDER BY is_default DESC, created_at, id LIMIT ${limit} OFFSET ${offset}`,
        params,
      ),
      this.db.query<{ total: number }>(`SELECT count(*)::int AS total FROM ${S}.projects WHERE tenant_id = $1 AND environment = $2`, params),
    ]);
    return { rows: rows.rows, total: count.rows[0].total };
  }

  /** Sets the given members (a null clears one); undefined when the project is not in the scope. */
  async update(scope: Scope, id: string, v: ProjectValues, now: Date): Promise<ProjectRow | undefined> {
    const keys = PROJECT_FIELDS.filter((k) => k in v);
    const sets = keys.map((k, i) => `${k} = $${i + 5}`);
    const r = await this.db.query<ProjectRow>(
      `UPDATE ${S}.projects SET ${[...sets, "updated_at = $4"].join(", ")} WHERE id = $1 AND tenant_id = $2 AND environment = $3 RETURNING *`,
      [id, scope.tenantId, scope.env, now, ...keys.map((k) => v[k] ?? null)],
    );
    return r.rows[0];
  }

  /** Deletes a non-default project (and its templates): "deleted", "default" (not deleted), or undefined when not in the scope. */
  async delete(scope: Scope, id: string): Promise<"deleted" | "default" | undefined> {
    const r = await this.db.query<{ is_default: boolean }>(
      `WITH d AS (DELETE FROM ${S}.projects WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND NOT is_default RETURNING is_default)
       SELECT is_default FROM d UNION ALL
       SELECT is_default FROM ${S}.projects WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND is_default`,
      [id, scope.tenantId, scope.env],
    );
    if (!r.rows.length) return undefined;
    return r.rows[0].is_default ? "default" : "deleted";
  }

  async templates(projectId: string): Promise<TemplateRow[]> {
    const r = await this.db.query<TemplateRow>(`SELECT * FROM ${S}.message_templates WHERE project_id = $1 ORDER BY channel, type`, [projectId]);
    return r.rows;
  }

  async template(projectId: string, channel: string, type: string): Promise<TemplateRow | undefined> {
    const r = await this.db.query<TemplateRow>(`SELECT * FROM ${S}.message_templates WHERE project_id = $1 AND channel = $2 AND type = $3`, [
      projectId,
      channel,
      type,
    ]);
    return r.rows[0];
  }

  /** Creates or replaces a template; `created` says which. */
  async putTemplate(t: Omit<TemplateRow, "created_at" | "updated_at">, now: Date): Promise<{ row: TemplateRow; created: boolean }> {
    const r = await this.db.query<TemplateRow & { inserted: boolean }>(
      `INSERT INTO ${S}.message_templates (project_id, channel, type, body, subject, button_text, is_active, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
       ON CONFLICT (project_id, channel, type) DO UPDATE SET body = EXCLUDED.body, subject = EXCLUDED.subject,
         button_text = EXCLUDED.button_text, is_active = EXCLUDED.is_active, updated_at = EXCLUDED.updated_at
       RETURNING *, (xmax = 0) AS inserted`,
      [t.project_id, t.channel, t.type, t.body, t.subject, t.button_text, t.is_active, now],
    );
    const { inserted, ...row } = r.rows[0];
    return { row, created: inserted };
  }

  async deleteTemplate(projectId: string, channel: string, type: string): Promise<boolean> {
    const r = await this.db.query(`DELETE FROM ${S}.message_templates WHERE project_id = $1 AND channel = $2 AND type = $3`, [projectId, channel, type]);
    return (r.rowCount ?? 0) > 0;
  }

  /**
   * What a message needs, in one query: the project (`projectId`, else the scope's default) and its
   * active template of this channel and type. Undefined when there is no such project (no default yet).
   */
  async forMessage(scope: Scope, projectId: string | null, channel: string, type: string): Promise<ProjectWithTemplate | undefined> {
    const r = await this.db.query<ProjectRow & { t_body: string | null; t_subject: string | null; t_button_text: string | null }>(
      `SELECT p.*, t.body AS t_body, t.subject AS t_subject, t.button_text AS t_button_text
         FROM ${S}.projects p
         LEFT JOIN ${S}.message_templates t ON t.project_id = p.id AND t.channel = $4 AND t.type = $5 AND t.is_active
        WHERE p.tenant_id = $1 AND p.environment = $2 AND (($3::text IS NOT NULL AND p.id = $3) OR ($3::text IS NULL AND p.is_default))`,
      [scope.tenantId, scope.env, projectId, channel, type],
    );
    const row = r.rows[0];
    if (!row) return undefined;
    const { t_body, t_subject, t_button_text, ...project } = row;
    const template =
      t_body === null
        ? undefined
        : {
            project_id: project.id,
            channel,
            type,
            body: t_body,
            subject: t_subject,
            button_text: t_button_text,
            is_active: true,
            created_at: project.created_at,
            updated_at: project.updated_at,
          };
    return { project, template };
  }
}
