import { PersonalData, sealedAad, sealingDatabase, type Database, type Scope, type SealedColumns, type SealingDatabase } from "@icv/platform";

export const S = "session";

/** Personal data of the session schema (docs/privacy.md): a session's number and client_metadata, sealed and opened on read. */
export const SESSION_SEALED: SealedColumns = {
  text: ["phone_number"],
  json: ["client_metadata"],
  // sessions (sess_… phone-first, auth_… auth) are the only rows of the schema with these columns
  rowKey: (row) => (typeof row.id === "string" ? row.id : undefined),
};

export type SessionKind = "phone" | "auth";
export type SessionStatus = "pending" | "verified" | "failed" | "expired";

export interface SessionRow {
  id: string;
  kind: SessionKind;
  tenant_id: string;
  environment: "live" | "test";
  /** A messaging channel of the provider table (@icv/platform MESSAGING_PROVIDERS). */
  channel: string;
  auth_type: string | null;
  status: SessionStatus;
  phone_number: string | null;
  token_lookup: string;
  client_metadata: Record<string, unknown> | null;
  created_at: Date;
  expires_at: Date;
  verified_at: Date | null;
  failed_at: Date | null;
  verification_id: string | null;
  proof_token: string | null;
  proof_expires_at: Date | null;
  updated_at: Date;
  /** The project whose templates the bot's replies use (null: the default project). */
  project_id: string | null;
}

export type NewSession = Pick<
  SessionRow,
  "id" | "kind" | "tenant_id" | "environment" | "channel" | "auth_type" | "phone_number" | "token_lookup" | "client_metadata" | "created_at" | "expires_at"
> & { project_id?: string | null };

/** The sessions (phone-first and auth): the session aggregate's SQL. */
export class SessionStore {
  private readonly db: SealingDatabase;

  /** `pd`: the data keys (hand-built test stores get this process's ephemeral ones). */
  constructor(db: Database, pd: PersonalData = PersonalData.ephemeral()) {
    this.db = sealingDatabase(db, pd, SESSION_SEALED);
  }

  async insert(s: NewSession): Promise<SessionRow> {
    const r = await this.db.query<SessionRow>(
      `INSERT INTO ${S}.sessions (id, kind, tenant_id, environment, channel, auth_type, status, phone_number, token_lookup, client_metadata,
         created_at, expires_at, updated_at, project_id)
       VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8, $9, $10, $11, $10, $12) RETURNING *`,
      [
        s.id,
        s.kind,
        s.tenant_id,
        s.environment,
        s.channel,
        s.auth_type,
        this.db.personalData.seal(s.phone_number, sealedAad("phone_number", s.id)),
        s.token_lookup,
        this.db.personalData.sealJson(s.client_metadata, sealedAad("client_metadata", s.id)),
        s.created_at,
        s.expires_at,
        s.project_id ?? null,
      ],
    );
    return r.rows[0];
  }

  async get(scope: Scope, kind: SessionKind, id: string): Promise<SessionRow | undefined> {
    const r = await this.db.query<SessionRow>(`SELECT * FROM ${S}.sessions WHERE id = $1 AND kind = $2 AND tenant_id = $3 AND environment = $4`, [
      id,
      kind,
      scope.tenantId,
      scope.env,
    ]);
    return r.rows[0];
  }

  /** Any session by id, for the public QR image (its URL carries a signature, checked by the caller). */
  async byId(id: string): Promise<SessionRow | undefined> {
    return (await this.db.query<SessionRow>(`SELECT * FROM ${S}.sessions WHERE id = $1`, [id])).rows[0];
  }

  /** The session a message's token names. */
  async byTokenLookup(lookup: string): Promise<SessionRow | undefined> {
    return (await this.db.query<SessionRow>(`SELECT * FROM ${S}.sessions WHERE token_lookup = $1`, [lookup])).rows[0];
  }

  /** pending → verified with the number, the verification and its proof; undefined when it was no longer pending. */
  async markVerified(s: SessionRow, v: { phone: string; verificationId: string; proofToken: string; proofExpiresAt: Date }, at: Date) {
    const r = await this.db.query<SessionRow>(
      `UPDATE ${S}.sessions SET status = 'verified', phone_number = $2, verification_id = $3, proof_token = $4, proof_expires_at = $5,
              verified_at = $6, updated_at = $6
        WHERE id = $1 AND status = 'pending' AND expires_at > $6 RETURNING *`,
      [s.id, this.db.personalData.seal(v.phone, sealedAad("phone_number", s.id)), v.verificationId, v.proofToken, v.proofExpiresAt, at],
    );
    return r.rows[0];
  }

  /** pending → failed (an auth session answered by another number); undefined when it was no longer pending. */
  async markFailed(s: SessionRow, at: Date): Promise<SessionRow | undefined> {
    const r = await this.db.query<SessionRow>(
      `UPDATE ${S}.sessions SET status = 'failed', failed_at = $2, updated_at = $2 WHERE id = $1 AND status = 'pending' AND expires_at > $2 RETURNING *`,
      [s.id, at],
    );
    return r.rows[0];
  }

  /** Expires one pending session past its expiry (the read path never shows a stale pending). */
  async expireOne(id: string, now: Date): Promise<SessionRow | undefined> {
    const r = await this.db.query<SessionRow>(
      `UPDATE ${S}.sessions SET status = 'expired', updated_at = $2 WHERE id = $1 AND status = 'pending' AND expires_at <= $2 RETURNING *`,
      [id, now],
    );
    return r.rows[0];
  }

  /** Moves up to `batch` due pending sessions to expired; rows another replica holds are skipped. */
  async expireDue(now: Date, batch = 500): Promise<number> {
    if ((await this.db.query(`SELECT 1 FROM ${S}.sessions WHERE status = 'pending' AND expires_at <= $1 LIMIT 1`, [now])).rowCount === 0) return 0;
    const r = await this.db.query(
      `UPDATE ${S}.sessions s SET status = 'expired', updated_at = $1
         FROM (SELECT id FROM ${S}.sessions WHERE status = 'pending' AND expires_at <= $1 ORDER BY expires_at LIMIT ${batch} FOR UPDATE SKIP LOCKED) due
        WHERE s.id = due.id`,
      [now],
    );
    return r.rowCount ?? 0;
  }
}
