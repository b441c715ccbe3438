import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ProofIssuedSchema, ProofRevokedSchema } from "@icv/contracts/gen/icv/events/v1/proof_events_pb.ts";
import { appendEvent, EventCache, outboxEvent, writeWithEvents, type Database, type Scope } from "@icv/platform";
import type { KeyEnv, NewKeyRecord, PublicJwk } from "./keys.ts";

const S = "proof";

export interface KeyRow {
  kid: string;
  environment: KeyEnv;
  public_jwk: PublicJwk;
  private_key_enc: string;
  status: "active" | "retired";
}

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

export class ProofStore {
  constructor(private readonly db: Database) {}

  /** The active key of one set (live or test). */
  async activeKey(env: KeyEnv): Promise<KeyRow | undefined> {
    const r = await this.db.query<KeyRow>(
      `SELECT kid, environment, public_jwk, private_key_enc, status FROM ${S}.signing_keys WHERE status = 'active' AND environment = $1`,
      [env],
    );
    return r.rows[0];
  }

  async key(kid: string): Promise<KeyRow | undefined> {
    const r = await this.db.query<KeyRow>(`SELECT kid, environment, public_jwk, private_key_enc, status FROM ${S}.signing_keys WHERE kid = $1`, [kid]);
    return r.rows[0];
  }

  /** Inserts the first active key of rec's set unless another replica won the race (then the caller reloads). */
  async insertFirstKey(rec: NewKeyRecord): Promise<boolean> {
    const r = await this.db.query(
      `INSERT INTO ${S}.signing_keys (kid, environment, public_jwk, private_key_enc, status) VALUES ($1, $2, $3, $4, 'active')
       ON CONFLICT DO NOTHING`,
      [rec.kid, rec.env, JSON.stringify(rec.publicJwk), rec.privateKeyEnc],
    );
    return r.rowCount === 1;
  }

  /** Retires the active key of rec's set and makes rec the active one, atomically; the other set is untouched. */
  async rotate(rec: NewKeyRecord, at: Date): Promise<string | undefined> {
    return this.db.tx(async (q) => {
      const old = await q.query<{ kid: string }>(
        `UPDATE ${S}.signing_keys SET status = 'retired', retired_at = $1 WHERE status = 'active' AND environment = $2 RETURNING kid`,
        [at, rec.env],
      );
      await q.query(`INSERT INTO ${S}.signing_keys (kid, environment, public_jwk, private_key_enc, status, created_at) VALUES ($1, $2, $3, $4, 'active', $5)`, [
        rec.kid,
        rec.env,
        JSON.stringify(rec.publicJwk),
        rec.privateKeyEnc,
        at,
      ]);
      return old.rows[0]?.kid;
    });
  }

  /**
   * Public keys to publish, of one set only: its active key, every retired key of it with a proof
   * still unexpired, and keys retired within the last day (a client may hold a JWKS or a signed
   * revocation list from before the rotation that long).
   */
  async publishedKeys(env: KeyEnv, now: Date): Promise<PublicJwk[]> {
    const r = await this.db.query<{ public_jwk: PublicJwk }>(
      `SELECT k.public_jwk FROM ${S}.signing_keys k
        WHERE k.environment = $2
          AND (k.status = 'active'
            OR k.retired_at > $1::timestamptz - interval '1 day'
            OR EXISTS (SELECT 1 FROM ${S}.proofs p WHERE p.kid = k.kid AND p.expires_at > $1))
        ORDER BY k.created_at DESC`,
      [now, env],
    );
    return r.rows.map((x) => x.public_jwk);
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
