import type { Database } from "@icv/platform";

const S = "proof";

export interface PublicJwk {
  kty: "RSA";
  n: string;
  e: string;
  alg: "RS256";
  use: "sig";
  kid: string;
}

/** A key set: live keys sign live proofs (published at jwks.json), test keys test proofs (jwks-test.json only). */
export type KeyEnv = "live" | "test";

export interface NewKeyRecord {
  kid: string;
  env: KeyEnv;
  publicJwk: PublicJwk;
  privateKeyEnc: string;
}

export interface KeyRow {
  kid: string;
  environment: KeyEnv;
  public_jwk: PublicJwk;
  private_key_enc: string;
  status: "active" | "retired";
}

/** The signing keys of both sets (live, test): the only SQL over proof.signing_keys. */
export class KeyStore {
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
}
