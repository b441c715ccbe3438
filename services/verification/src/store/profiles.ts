import type { Database, Scope } from "@icv/platform";
import type { Status } from "./rows.ts";

const S = "verification";

export type MaskLevel = "full" | "partial" | "hidden";

export interface ProfileProofItem {
  verification_id: string;
  label: string;
  mask_level: MaskLevel;
  display_order: number;
}

export interface ProfileRow {
  id: string;
  tenant_id: string;
  environment: "live" | "test";
  display_name: string;
  bio: string | null;
  avatar_url: string | null;
  is_public: boolean;
  proofs: ProfileProofItem[];
  created_at: Date;
  updated_at: Date;
}

/** What a profile shows of a verification it lists. */
export interface ListedVerification {
  id: string;
  type: string;
  channel: string;
  identifier: string;
  status: Status;
  verified_at: Date | null;
  proof_expires_at: Date | null;
  revoked_at: Date | null;
}

export type ProfileFields = Pick<ProfileRow, "display_name" | "bio" | "avatar_url" | "is_public" | "proofs">;

/** Profiles (a tenant's public pages of verified assets); the only SQL on them. */
export class ProfileStore {
  constructor(private readonly db: Database) {}

  async insert(scope: Scope, id: string, f: ProfileFields, at: Date): Promise<ProfileRow> {
    const r = await this.db.query<ProfileRow>(
      `INSERT INTO ${S}.profiles (id, tenant_id, environment, display_name, bio, avatar_url, is_public, proofs, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $9) RETURNING *`,
      [id, scope.tenantId, scope.env, f.display_name, f.bio, f.avatar_url, f.is_public, JSON.stringify(f.proofs), at],
    );
    return r.rows[0];
  }

  async get(scope: Scope, id: string): Promise<ProfileRow | undefined> {
    const r = await this.db.query<ProfileRow>(`SELECT * FROM ${S}.profiles WHERE id = $1 AND tenant_id = $2 AND environment = $3`, [
      id,
      scope.tenantId,
      scope.env,
    ]);
    return r.rows[0];
  }

  /** A public profile by id alone (the public page); undefined when unknown or not public. */
  async getPublic(id: string): Promise<ProfileRow | undefined> {
    const r = await this.db.query<ProfileRow>(`SELECT * FROM ${S}.profiles WHERE id = $1 AND is_public`, [id]);
    return r.rows[0];
  }

  async list(scope: Scope, limit: number, offset: number): Promise<{ rows: ProfileRow[]; total: number }> {
    const [rows, count] = await Promise.all([
      this.db.query<ProfileRow>(`SELECT * FROM ${S}.profiles WHERE tenant_id = $1 AND environment = $2 ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4`, [
        scope.tenantId,
        scope.env,
        limit,
        offset,
      ]),
      this.db.query<{ total: number }>(`SELECT count(*)::int AS total FROM ${S}.profiles WHERE tenant_id = $1 AND environment = $2`, [
        scope.tenantId,
        scope.env,
      ]),
    ]);
    return { rows: rows.rows, total: count.rows[0].total };
  }

  async update(scope: Scope, id: string, f: ProfileFields, at: Date): Promise<ProfileRow | undefined> {
    const r = await this.db.query<ProfileRow>(
      `UPDATE ${S}.profiles SET display_name = $4, bio = $5, avatar_url = $6, is_public = $7, proofs = $8::jsonb, updated_at = $9
        WHERE id = $1 AND tenant_id = $2 AND environment = $3 RETURNING *`,
      [id, scope.tenantId, scope.env, f.display_name, f.bio, f.avatar_url, f.is_public, JSON.stringify(f.proofs), at],
    );
    return r.rows[0];
  }

  async delete(scope: Scope, id: string): Promise<boolean> {
    const r = await this.db.query(`DELETE FROM ${S}.profiles WHERE id = $1 AND tenant_id = $2 AND environment = $3`, [id, scope.tenantId, scope.env]);
    return r.rowCount === 1;
  }

  /** The verifications of one scope among `ids`, in one query (others', unknown and redacted ids are left out: a redacted one names no asset). */
  async verifications(scope: Scope, ids: string[]): Promise<ListedVerification[]> {
    if (!ids.length) return [];
    const r = await this.db.query<ListedVerification>(
      `SELECT id, type, channel, identifier, status, verified_at, proof_expires_at, revoked_at FROM ${S}.verifications
        WHERE id = ANY($1::text[]) AND tenant_id = $2 AND environment = $3 AND redacted_at IS NULL`,
      [ids, scope.tenantId, scope.env],
    );
    return r.rows;
  }
}
