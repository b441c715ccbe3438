import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ProofIssuedSchema, ProofRevokedSchema } from "@icv/contracts/gen/icv/events/v1/proof_events_pb.ts";
import { appendEvent, EventCache, outboxEvent, writeWithEvents, type Database, type Scope } from "@icv/platform";
import type { KeyEnv } from "./keys.ts";

const S = "proof";

export interface ProofRow {
  id: string;
  tenant_id: string;
  environment: "live" | "test";
  kid: string;
  type: string;
  channel: string;
  identifier_hash: string;
  external_user_id: string | null;
  token: string;
  verified_at: Date;
  issued_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
  revoked_reason: string | null;
  method: string | null;
}

export interface NewProof {
  id: string;
  scope: Scope;
  kid: string;
  type: string;
  channel: string;
  identifierHash: string;
  externalUserId?: string;
  method: string;
  token: string;
  verifiedAt: Date;
  issuedAt: Date;
  expiresAt: Date;
}

/** Proofs and their revocation, with their events: the only SQL over proof.proofs. */
export class ProofStore {
  constructor(private readonly db: Database) {}

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
   * Whether a proof is revoked, by id, from memory after the first read: a proof's only change is
   * its revocation, whose proof.revoked event drops it (at once here in revoke(), in other workers
   * and replicas when the event arrives: start.ts follows the proof events). An unknown id is
   * never remembered (its proof may be stored a moment later).
   */
  readonly revocations = new EventCache<Pick<ProofRow, "revoked_at" | "revoked_reason" | "environment">>(() => true);

  async revocationState(id: string): Promise<Pick<ProofRow, "revoked_at" | "revoked_reason" | "environment"> | undefined> {
    return this.revocations.load(id, async () => {
      const r = await this.db.query<ProofRow>(`SELECT revoked_at, revoked_reason, environment FROM ${S}.proofs WHERE id = $1`, [id]);
      return r.rows[0];
    });
  }

  /** Stores a proof with its `proof.issued` event (one statement); false when a proof with this id already exists. */
  async insertProof(p: NewProof): Promise<boolean> {
    const r = await writeWithEvents(
      this.db,
      S,
      `INSERT INTO ${S}.proofs (id, tenant_id, environment, kid, type, channel, identifier_hash, external_user_id, token, verified_at, issued_at, expires_at, method)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (id) DO NOTHING RETURNING id`,
      [
        p.id,
        p.scope.tenantId,
        p.scope.env,
        p.kid,
        p.type,
        p.channel,
        p.identifierHash,
        p.externalUserId ?? null,
        p.token,
        p.verifiedAt,
        p.issuedAt,
        p.expiresAt,
        p.method,
      ],
      [
        outboxEvent(
          "proof.issued",
          { aggregateType: "proof", aggregateId: p.id, tenantId: p.scope.tenantId, environment: p.scope.env },
          create(ProofIssuedSchema, {
            proofId: p.id,
            kid: p.kid,
            type: p.type,
            channel: p.channel,
            method: p.method,
            expiresAt: timestampFromDate(p.expiresAt),
          }),
        ),
      ],
      p.issuedAt,
    );
    return r.rowCount === 1;
  }

  /** Revokes once; answers the row as it stands afterwards (the original revocation when it was already revoked). */
  async revoke(scope: Scope, id: string, reason: string, at: Date): Promise<ProofRow | undefined> {
    const row = await this.db.tx(async (q) => {
      const r = await q.query<ProofRow>(
        `UPDATE ${S}.proofs SET revoked_at = $4, revoked_reason = $5
          WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND revoked_at IS NULL RETURNING *`,
        [id, scope.tenantId, scope.env, at, reason],
      );
      if (r.rows[0]) {
        const head = { aggregateType: "proof", aggregateId: id, tenantId: scope.tenantId, environment: scope.env };
        await appendEvent(q, S, outboxEvent("proof.revoked", head, create(ProofRevokedSchema, { proofId: id, reason, revokedAt: timestampFromDate(at) })), at);
        return r.rows[0];
      }
      const cur = await q.query<ProofRow>(`SELECT * FROM ${S}.proofs WHERE id = $1 AND tenant_id = $2 AND environment = $3`, [id, scope.tenantId, scope.env]);
      return cur.rows[0];
    });
    // committed: this process reads it from the database again (the event tells the others)
    this.revocations.drop(id);
    return row;
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
