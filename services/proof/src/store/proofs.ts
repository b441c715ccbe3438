import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ProofReinstatedSchema, ProofRevokedSchema, ProofSuspendedSchema } from "@icv/contracts/gen/icv/events/v1/proof_events_pb.ts";
import { appendEvent, batched, EventCache, outboxEvent, type Database, type HolderKey, type Queryable, type Scope } from "@icv/platform";
import type { KeyEnv } from "./keys.ts";
import { insertProof, insertProofs, tokenSha256, type NewProof } from "./proof-insert.ts";

export type { NewProof };

const S = "proof";

export interface ProofRow {
  id: string;
  tenant_id: string;
  environment: "live" | "test";
  kid: string;
  type: string;
  channel: string;
  identifier_hash: string;
  /** NULL: issued before hashes were salted (identifier_hash is the plain SHA-256) */
  identifier_salt: string | null;
  /** the transparency log's subject; NULL on proofs issued before it was kept */
  subject: string | null;
  external_user_id: string | null;
  token: string;
  /** the SD-JWT VC issued beside the JWT, when asked for */
  sd_jwt_vc: string | null;
  holder_key: HolderKey | null;
  verified_at: Date;
  issued_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
  revoked_reason: string | null;
  suspended_at: Date | null;
  suspended_reason: string | null;
  method: string | null;
  /** its Token Status List (per environment) and index there; NULL on proofs issued before lists */
  status_list: number | null;
  status_idx: number | null;
}

/** What validate needs of a proof, from memory after the first read (see `revocations`). */
export type ProofState = Pick<ProofRow, "revoked_at" | "revoked_reason" | "suspended_at" | "environment" | "identifier_salt">;

/** The members every proof event has, as a log entry names the proof (DECISIONS.md, Transparency log). */
const named = (p: ProofRow) => ({
  proofId: p.id,
  tokenSha256: tokenSha256(p.token),
  env: p.environment,
  type: p.type,
  channel: p.channel,
  method: p.method ?? "",
  subject: p.subject ?? "",
  statusList: p.status_list === null ? "" : `${p.environment}-${p.status_list}`,
});

const headOf = (p: ProofRow) => ({ aggregateType: "proof", aggregateId: p.id, tenantId: p.tenant_id, environment: p.environment });

/** Erases the stored SD-JWT VC of these proofs (each in its own scope), in one statement on `q` (a consumer's transaction). */
export async function eraseCredentials(q: Queryable, proofs: { id: string; tenantId: string; env: string }[]): Promise<void> {
  if (!proofs.length) return;
  await q.query(
    `UPDATE ${S}.proofs p SET sd_jwt_vc = NULL
       FROM unnest($1::text[], $2::text[], $3::text[]) AS x(id, tenant_id, environment)
      WHERE p.id = x.id AND p.tenant_id = x.tenant_id AND p.environment = x.environment AND p.sd_jwt_vc IS NOT NULL`,
    [proofs.map((p) => p.id), proofs.map((p) => p.tenantId), proofs.map((p) => p.env)],
  );
}

/** Proofs, their revocation and suspension, with their events; the status-list indexes; presentations seen: the only SQL over them. */
export class ProofStore {
  constructor(private readonly db: Database) {
    this.insertProof = batched(db, { one: (p) => insertProof(db, p), many: (ps) => insertProofs(db, ps), key: (p) => p.id });
  }

  async proof(id: string): Promise<ProofRow | undefined> {
    const r = await this.db.query<ProofRow>(`SELECT * FROM ${S}.proofs WHERE id = $1`, [id]);
    return r.rows[0];
  }

  async scopedProof(scope: Scope, id: string): Promise<ProofRow | undefined> {
    const r = await this.db.query<ProofRow>(`SELECT * FROM ${S}.proofs WHERE id = $1 AND tenant_id = $2 AND environment = $3`, [id, scope.tenantId, scope.env]);
    return r.rows[0];
  }

  /** The proofs of one scope among `ids` (one query; unknown ids and other scopes' are left out). */
  async scopedProofs(scope: Scope, ids: string[]): Promise<ProofRow[]> {
    if (!ids.length) return [];
    const r = await this.db.query<ProofRow>(`SELECT * FROM ${S}.proofs WHERE id = ANY($1::text[]) AND tenant_id = $2 AND environment = $3`, [
      ids,
      scope.tenantId,
      scope.env,
    ]);
    return r.rows;
  }

  /**
   * A proof's state for validate (revoked, suspended, environment, salt), by id, from memory after
   * the first read: every change of a proof comes with an event (revoked, suspended, reinstated)
   * that drops it (at once here in revoke(), suspend() and reinstate(); in other workers and
   * replicas when the event arrives: start.ts follows the proof events). An unknown id is never
   * remembered (its proof may be stored a moment later).
   */
  readonly revocations = new EventCache<ProofState>(() => true);

  async revocationState(id: string): Promise<ProofState | undefined> {
    return this.revocations.load(id, async () => {
      const r = await this.db.query<ProofState>(
        `SELECT revoked_at, revoked_reason, suspended_at, environment, identifier_salt FROM ${S}.proofs WHERE id = $1`,
        [id],
      );
      return r.rows[0];
    });
  }

  /**
   * Stores a proof with its `proof.issued` event (one statement); false when a proof with this id
   * already exists. Concurrent calls are written together (batched(), group commit).
   */
  readonly insertProof: (p: NewProof) => Promise<boolean>;

  /** The proof of one scope in `q`, locked for a change (undefined: none). */
  private async locked(q: Queryable, scope: Scope, id: string): Promise<ProofRow | undefined> {
    const r = await q.query<ProofRow>(`SELECT * FROM ${S}.proofs WHERE id = $1 AND tenant_id = $2 AND environment = $3 FOR UPDATE`, [
      id,
      scope.tenantId,
      scope.env,
    ]);
    return r.rows[0];
  }

  /** Revokes once; answers the row as it stands afterwards (the original revocation when it was already revoked). */
  async revoke(scope: Scope, id: string, reason: string, at: Date): Promise<ProofRow | undefined> {
    const row = await this.db.tx(async (q) => {
      const r = await q.query<ProofRow>(
        `UPDATE ${S}.proofs SET revoked_at = $4, revoked_reason = $5
          WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND revoked_at IS NULL RETURNING *`,
        [id, scope.tenantId, scope.env, at, reason],
      );
      const p = r.rows[0];
      if (p) {
        await appendEvent(
          q,
          S,
          outboxEvent("proof.revoked", headOf(p), create(ProofRevokedSchema, { ...named(p), reason, revokedAt: timestampFromDate(at) })),
          at,
        );
        return p;
      }
      const cur = await q.query<ProofRow>(`SELECT * FROM ${S}.proofs WHERE id = $1 AND tenant_id = $2 AND environment = $3`, [id, scope.tenantId, scope.env]);
      return cur.rows[0];
    });
    // committed: this process reads it from the database again (the event tells the others)
    this.revocations.drop(id);
    return row;
  }

  /**
   * Suspends a valid proof with its `proof.suspended` event; answers the row as it stands
   * afterwards (suspended_at unset: it was revoked or expired, nothing changed).
   */
  async suspend(scope: Scope, id: string, reason: string, at: Date): Promise<ProofRow | undefined> {
    const row = await this.db.tx(async (q) => {
      const p = await this.locked(q, scope, id);
      if (!p || p.revoked_at || p.suspended_at || p.expires_at <= at) return p;
      const r = await q.query<ProofRow>(`UPDATE ${S}.proofs SET suspended_at = $2, suspended_reason = $3 WHERE id = $1 RETURNING *`, [id, at, reason]);
      const s = r.rows[0];
      await appendEvent(
        q,
        S,
        outboxEvent("proof.suspended", headOf(s), create(ProofSuspendedSchema, { ...named(s), reason, suspendedAt: timestampFromDate(at) })),
        at,
      );
      return s;
    });
    this.revocations.drop(id);
    return row;
  }

  /** Ends a suspension with its `proof.reinstated` event; a proof that is not suspended (or is revoked) is answered as it is. */
  async reinstate(scope: Scope, id: string, at: Date): Promise<ProofRow | undefined> {
    const row = await this.db.tx(async (q) => {
      const p = await this.locked(q, scope, id);
      if (!p?.suspended_at || p.revoked_at) return p;
      const r = await q.query<ProofRow>(`UPDATE ${S}.proofs SET suspended_at = NULL, suspended_reason = NULL WHERE id = $1 RETURNING *`, [id]);
      const s = r.rows[0];
      const event = create(ProofReinstatedSchema, {
        ...named(s),
        reinstatedAt: timestampFromDate(at),
        suspendedAt: timestampFromDate(p.suspended_at),
        reason: p.suspended_reason ?? "",
      });
      await appendEvent(q, S, outboxEvent("proof.reinstated", headOf(s), event), at);
      return s;
    });
    this.revocations.drop(id);
    return row;
  }

  /** The entries of one list that are not 0 (valid): its revoked and suspended proofs. */
  async statusEntries(env: KeyEnv, list: number): Promise<{ idx: number; revoked: boolean }[]> {
    const r = await this.db.query<{ idx: number; revoked: boolean }>(
      `SELECT status_idx AS idx, revoked_at IS NOT NULL AS revoked FROM ${S}.proofs
        WHERE environment = $1 AND status_list = $2 AND (revoked_at IS NOT NULL OR suspended_at IS NOT NULL)`,
      [env, list],
    );
    return r.rows;
  }

  /** The first index of a fresh block of status-list indexes (never handed out before, on any replica). */
  async nextStatusBlock(env: KeyEnv): Promise<number> {
    const r = await this.db.query<{ start: string }>(`SELECT nextval('${S}.status_blocks_${env}') AS start`);
    return Number(r.rows[0].start);
  }

  /** The first index of the last block handed out, or undefined when none was. */
  async lastStatusBlock(env: KeyEnv): Promise<number | undefined> {
    const r = await this.db.query<{ last_value: string; is_called: boolean }>(`SELECT last_value, is_called FROM ${S}.status_blocks_${env}`);
    return r.rows[0]?.is_called ? Number(r.rows[0].last_value) : undefined;
  }

  /** Records a key-bound presentation; false when the same (credential, nonce) was recorded before (a replay). */
  async markPresented(p: { credentialSha256: string; nonceSha256: string; expiresAt: Date }): Promise<boolean> {
    const r = await this.db.query(
      `INSERT INTO ${S}.presentations_seen (credential_sha256, nonce_sha256, expires_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
      [p.credentialSha256, p.nonceSha256, p.expiresAt],
    );
    return r.rowCount === 1;
  }

  /** Forgets presentations whose key-binding JWT can no longer be accepted anyway; how many went. */
  async sweepPresented(now: Date): Promise<number> {
    const r = await this.db.query(`DELETE FROM ${S}.presentations_seen WHERE expires_at < $1`, [now]);
    return r.rowCount ?? 0;
  }

  /** One environment's revoked proofs not yet expired (an expired proof fails offline checks on its own), oldest first. */
  async revokedSince(env: KeyEnv, since: Date | undefined, now: Date): Promise<{ id: string; revoked_at: Date; revoked_reason: string }[]> {
    const r = await this.db.query<{ id: string; revoked_at: Date; revoked_reason: string }>(
      `SELECT id, revoked_at, revoked_reason FROM ${S}.proofs
        WHERE environment = $3 AND revoked_at IS NOT NULL AND expires_at > $1 AND ($2::timestamptz IS NULL OR revoked_at > $2)
        ORDER BY revoked_at, id`,
      [now, since ?? null, env],
    );
    return r.rows;
  }
}
