import { hash } from "node:crypto";
import { newId, type Database, type EnvName } from "@icv/platform";

const S = "gateway";

export type Role = "admin" | "developer" | "viewer";
export const ROLES: readonly Role[] = ["admin", "developer", "viewer"];

export interface ConsoleUser {
  id: string;
  tenant_id: string;
  email: string;
  role: Role;
  created_at: Date;
  revoked_at: Date | null;
}

export interface Passkey {
  id: string;
  user_id: string;
  tenant_id: string;
  public_key: Uint8Array;
  counter: string | number;
  transports: string[];
}

export interface AuditEntry {
  tenantId: string;
  env?: EnvName;
  userId?: string;
  email?: string;
  action: string;
  target?: string;
  outcome: "ok" | "denied" | "failed";
  ip?: string;
  userAgent?: string;
}

export const sha256 = (s: string): string => hash("sha256", s, "hex");

const USER_COLS = "id, tenant_id, email, role, created_at, revoked_at";

/** The console's tables in the gateway's schema: users, invites, passkeys, challenges, sessions, audit. */
export class ConsoleStore {
  constructor(private readonly db: Database) {}

  /** A user (made when first invited) and a new invite for them; answers the user. */
  async invite(u: { tenantId: string; email: string; role: Role; tokenHash: string; by?: string; at: Date; expiresAt: Date }): Promise<ConsoleUser> {
    return this.db.tx(async (q) => {
      const found = await q.query<ConsoleUser>(`SELECT ${USER_COLS} FROM ${S}.console_users WHERE tenant_id = $1 AND lower(email) = lower($2)`, [
        u.tenantId,
        u.email,
      ]);
      let user = found.rows[0];
      if (user) {
        // a new invite replaces a lost passkey; it may also change the role and bring a revoked user back
        user = (
          await q.query<ConsoleUser>(`UPDATE ${S}.console_users SET role = $2, revoked_at = NULL WHERE id = $1 RETURNING ${USER_COLS}`, [user.id, u.role])
        ).rows[0];
      } else {
        user = (
          await q.query<ConsoleUser>(
            `INSERT INTO ${S}.console_users (id, tenant_id, email, role, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING ${USER_COLS}`,
            [newId("consoleUser", u.at.getTime()), u.tenantId, u.email, u.role, u.at],
          )
        ).rows[0];
      }
      await q.query(`INSERT INTO ${S}.console_invites (token_hash, user_id, tenant_id, created_by, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`, [
        u.tokenHash,
        user.id,
        u.tenantId,
        u.by ?? null,
        u.at,
        u.expiresAt,
      ]);
      return user;
    });
  }

  /** The user of an open invite (unused, unexpired), or undefined. */
  async openInvite(tokenHash: string, now: Date): Promise<ConsoleUser | undefined> {
    const r = await this.db.query<ConsoleUser>(
      `SELECT u.id, u.tenant_id, u.email, u.role, u.created_at, u.revoked_at FROM ${S}.console_invites i JOIN ${S}.console_users u ON u.id = i.user_id
        WHERE i.token_hash = $1 AND i.used_at IS NULL AND i.expires_at > $2 AND u.revoked_at IS NULL`,
      [tokenHash, now],
    );
    return r.rows[0];
  }

  /**
   * Uses an invite once: stores the passkey it registered and ends the user's other passkeys (a
   * new invite replaces a lost one). Answers the user, or undefined when the invite was used,
   * expired or its user revoked meanwhile.
   */
  async acceptInvite(tokenHash: string, now: Date, key: Omit<Passkey, "user_id" | "tenant_id">): Promise<ConsoleUser | undefined> {
    return this.db.tx(async (q) => {
      const used = await q.query<{ user_id: string }>(
        `UPDATE ${S}.console_invites SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2 RETURNING user_id`,
        [tokenHash, now],
      );
      const userId = used.rows[0]?.user_id;
      if (!userId) return undefined;
      const user = (await q.query<ConsoleUser>(`SELECT ${USER_COLS} FROM ${S}.console_users WHERE id = $1 AND revoked_at IS NULL`, [userId])).rows[0];
      if (!user) return undefined;
      await q.query(`DELETE FROM ${S}.console_passkeys WHERE user_id = $1`, [userId]);
      await q.query(
        `INSERT INTO ${S}.console_passkeys (id, user_id, tenant_id, public_key, counter, transports, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [key.id, userId, user.tenant_id, Buffer.from(key.public_key), key.counter, key.transports, now],
      );
      return user;
    });
  }

  async passkey(id: string): Promise<Passkey | undefined> {
    const r = await this.db.query<Passkey>(`SELECT id, user_id, tenant_id, public_key, counter, transports FROM ${S}.console_passkeys WHERE id = $1`, [id]);
    return r.rows[0];
  }

  async usedPasskey(id: string, counter: number, at: Date): Promise<void> {
    await this.db.query(`UPDATE ${S}.console_passkeys SET counter = $2, last_used_at = $3 WHERE id = $1`, [id, counter, at]);
  }

  async saveChallenge(c: { challenge: string; purpose: "register" | "sign_in"; inviteHash?: string; expiresAt: Date }, now: Date): Promise<void> {
    await this.db.query(`INSERT INTO ${S}.console_challenges (challenge, purpose, invite_hash, expires_at) VALUES ($1, $2, $3, $4)`, [
      c.challenge,
      c.purpose,
      c.inviteHash ?? null,
      c.expiresAt,
    ]);
    // expired ones go as new ones come
    await this.db.query(`DELETE FROM ${S}.console_challenges WHERE expires_at < $1`, [now]);
  }

  /** Takes a challenge once: true when it was issued for this purpose (and invite) and is unexpired. */
  async takeChallenge(challenge: string, purpose: "register" | "sign_in", now: Date, inviteHash?: string): Promise<boolean> {
    const r = await this.db.query<{ invite_hash: string | null }>(
      `DELETE FROM ${S}.console_challenges WHERE challenge = $1 AND purpose = $2 AND expires_at > $3 RETURNING invite_hash`,
      [challenge, purpose, now],
    );
    return r.rowCount === 1 && (purpose === "sign_in" || r.rows[0].invite_hash === inviteHash);
  }

  async user(tenantId: string, id: string): Promise<ConsoleUser | undefined> {
    return (await this.db.query<ConsoleUser>(`SELECT ${USER_COLS} FROM ${S}.console_users WHERE tenant_id = $1 AND id = $2`, [tenantId, id])).rows[0];
  }

  async usersOf(tenantId: string, page: number, limit: number): Promise<{ rows: ConsoleUser[]; total: number }> {
    const [rows, total] = await Promise.all([
      this.db.query<ConsoleUser>(`SELECT ${USER_COLS} FROM ${S}.console_users WHERE tenant_id = $1 ORDER BY id LIMIT $2 OFFSET $3`, [
        tenantId,
        limit,
        (page - 1) * limit,
      ]),
      this.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${S}.console_users WHERE tenant_id = $1`, [tenantId]),
    ]);
    return { rows: rows.rows, total: total.rows[0].n };
  }

  /** Revokes a user and ends their sessions at once; undefined when not this tenant's. */
  async revokeUser(tenantId: string, id: string, at: Date): Promise<ConsoleUser | undefined> {
    return this.db.tx(async (q) => {
      const r = await q.query<ConsoleUser>(
        `UPDATE ${S}.console_users SET revoked_at = coalesce(revoked_at, $3) WHERE tenant_id = $1 AND id = $2 RETURNING ${USER_COLS}`,
        [tenantId, id, at],
      );
      if (r.rows[0]) await q.query(`UPDATE ${S}.console_sessions SET ended_at = $2 WHERE user_id = $1 AND ended_at IS NULL`, [id, at]);
      return r.rows[0];
    });
  }

  async startSession(s: { idHash: string; user: ConsoleUser; at: Date; ip?: string; userAgent?: string }): Promise<void> {
    await this.db.query(
      `INSERT INTO ${S}.console_sessions (id_hash, user_id, tenant_id, created_at, last_seen_at, ip, user_agent) VALUES ($1, $2, $3, $4, $4, $5, $6)`,
      [s.idHash, s.user.id, s.user.tenant_id, s.at, s.ip ?? null, s.userAgent?.slice(0, 300) ?? null],
    );
  }

  /**
   * The user of a live session, seen now: not ended, within the idle and absolute limits, its user
   * not revoked. Marks it seen (so the idle limit starts again).
   */
  async session(idHash: string, now: Date, idleMs: number, absoluteMs: number): Promise<ConsoleUser | undefined> {
    const r = await this.db.query<ConsoleUser>(
      `UPDATE ${S}.console_sessions s SET last_seen_at = $2 FROM ${S}.console_users u
        WHERE s.id_hash = $1 AND u.id = s.user_id AND s.ended_at IS NULL AND u.revoked_at IS NULL
          AND s.last_seen_at > $2::timestamptz - make_interval(secs => $3::double precision / 1000)
          AND s.created_at > $2::timestamptz - make_interval(secs => $4::double precision / 1000)
        RETURNING u.id, u.tenant_id, u.email, u.role, u.created_at, u.revoked_at`,
      [idHash, now, idleMs, absoluteMs],
    );
    return r.rows[0];
  }

  async endSession(idHash: string, at: Date): Promise<void> {
    await this.db.query(`UPDATE ${S}.console_sessions SET ended_at = $2 WHERE id_hash = $1 AND ended_at IS NULL`, [idHash, at]);
  }

  async endSessionsOf(userId: string, at: Date): Promise<number> {
    return (await this.db.query(`UPDATE ${S}.console_sessions SET ended_at = $2 WHERE user_id = $1 AND ended_at IS NULL`, [userId, at])).rowCount;
  }

  async audit(e: AuditEntry, at: Date): Promise<void> {
    await this.db.query(
      `INSERT INTO ${S}.console_audit (id, tenant_id, environment, user_id, email, action, target, outcome, ip, user_agent, at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [
        newId("consoleAudit", at.getTime()),
        e.tenantId,
        e.env ?? null,
        e.userId ?? null,
        e.email ?? null,
        e.action,
        e.target ?? null,
        e.outcome,
        e.ip ?? null,
        e.userAgent?.slice(0, 300) ?? null,
        at,
      ],
    );
  }

  async auditOf(tenantId: string, page: number, limit: number) {
    const [rows, total] = await Promise.all([
      this.db.query<Record<string, unknown>>(
        `SELECT id, environment, user_id, email, action, target, outcome, ip, user_agent, at FROM ${S}.console_audit WHERE tenant_id = $1 ORDER BY id DESC LIMIT $2 OFFSET $3`,
        [tenantId, limit, (page - 1) * limit],
      ),
      this.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${S}.console_audit WHERE tenant_id = $1`, [tenantId]),
    ]);
    return { rows: rows.rows, total: total.rows[0].n };
  }

  /** One environment's keys, newest first, a page at a time (never the keys). */
  async keysOf(tenantId: string, env: EnvName, page: number, limit: number) {
    const [rows, total] = await Promise.all([
      this.db.query<{ id: string; key_prefix: string; created_at: Date; last_used_at: Date | null; revoked_at: Date | null }>(
        `SELECT id, key_prefix, created_at, last_used_at, revoked_at FROM ${S}.api_keys WHERE tenant_id = $1 AND environment = $2 ORDER BY id DESC LIMIT $3 OFFSET $4`,
        [tenantId, env, limit, (page - 1) * limit],
      ),
      this.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${S}.api_keys WHERE tenant_id = $1 AND environment = $2`, [tenantId, env]),
    ]);
    return { rows: rows.rows, total: total.rows[0].n };
  }

  /** The key's tenant and environment, when it is this scope's (revoking another's is not_found). */
  async keyIn(tenantId: string, env: EnvName, id: string): Promise<boolean> {
    return (await this.db.query(`SELECT 1 FROM ${S}.api_keys WHERE id = $1 AND tenant_id = $2 AND environment = $3`, [id, tenantId, env])).rowCount === 1;
  }
}
