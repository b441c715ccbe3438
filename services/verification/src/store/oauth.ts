/** OAuth sign-ins: the states in flight, and the sign-in link secret held as the verification's code HMAC. */
import type { Database, Scope } from "@icv/platform";
import type { VerificationRow } from "./rows.ts";

const S = "verification";

export interface OAuthStateRow {
  state_hash: string;
  tenant_id: string;
  environment: "live" | "test";
  verification_id: string;
  channel: string;
  created_at: Date;
  expires_at: Date;
}

export class OAuthStore {
  constructor(private readonly db: Database) {}

  /** A verification by id alone, any tenant: a sign-in link names it, and its secret is checked next. */
  async verificationById(id: string): Promise<VerificationRow | undefined> {
    const r = await this.db.query<VerificationRow>(`SELECT * FROM ${S}.verifications WHERE id = $1`, [id]);
    return r.rows[0];
  }

  /** Spends a pending verification's link secret (single use): true only for the one caller that held it. */
  async spendLink(scope: Scope, id: string, codeHmac: string): Promise<boolean> {
    const r = await this.db.query(
      `UPDATE ${S}.verifications SET code_hmac = NULL WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND status = 'pending' AND code_hmac = $4`,
      [id, scope.tenantId, scope.env, codeHmac],
    );
    return (r.rowCount ?? 0) === 1;
  }

  /** A fresh link for another try (after a wrong account, a refusal or a provider error), while pending. */
  async rearmLink(scope: Scope, id: string, codeHmac: string, deepLink: string): Promise<boolean> {
    const r = await this.db.query(
      `UPDATE ${S}.verifications SET code_hmac = $4, deep_link = $5 WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND status = 'pending'`,
      [id, scope.tenantId, scope.env, codeHmac, deepLink],
    );
    return (r.rowCount ?? 0) === 1;
  }

  async insertState(s: OAuthStateRow): Promise<void> {
    await this.db.query(
      `INSERT INTO ${S}.oauth_states (state_hash, tenant_id, environment, verification_id, channel, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [s.state_hash, s.tenant_id, s.environment, s.verification_id, s.channel, s.created_at, s.expires_at],
    );
  }

  /** Takes a state (single use: deleted as it is read); undefined when unknown, spent, of another channel or expired. */
  async takeState(stateHash: string, channel: string, now: Date): Promise<OAuthStateRow | undefined> {
    const r = await this.db.query<OAuthStateRow>(`DELETE FROM ${S}.oauth_states WHERE state_hash = $1 RETURNING *`, [stateHash]);
    const s = r.rows[0];
    return s && s.channel === channel && s.expires_at > now ? s : undefined;
  }

  /** Removes states whose sign-in was abandoned; answers how many. */
  async pruneStates(now: Date): Promise<number> {
    const r = await this.db.query(`DELETE FROM ${S}.oauth_states WHERE expires_at <= $1`, [now]);
    return r.rowCount ?? 0;
  }
}
