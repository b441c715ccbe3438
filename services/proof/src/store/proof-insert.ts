/** The INSERT of an issued proof with its `proof.issued` event (ProofStore.insertProof), one row or a batch's rows in one statement. */
import { createHash } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ProofIssuedSchema } from "@icv/contracts/gen/icv/events/v1/proof_events_pb.ts";
import { latest, outboxEvent, textColumns, writeRowsWithEvents, writeWithEvents, type HolderKey, type Queryable, type Scope } from "@icv/platform";

const S = "proof";

export interface NewProof {
  id: string;
  scope: Scope;
  kid: string;
  type: string;
  channel: string;
  identifierHash: string;
  identifierSalt: string;
  subject: string;
  externalUserId?: string;
  method: string;
  token: string;
  sdJwtVc?: string;
  holderKey?: HolderKey;
  statusList: number;
  statusIdx: number;
  verifiedAt: Date;
  issuedAt: Date;
  expiresAt: Date;
}

export const tokenSha256 = (token: string) => createHash("sha256").update(token).digest("hex");

/** The columns written, in the order of `values` (and their types, for the batch's arrays). */
const COLUMNS = [
  ["id", "text"],
  ["tenant_id", "text"],
  ["environment", "text"],
  ["kid", "text"],
  ["type", "text"],
  ["channel", "text"],
  ["identifier_hash", "text"],
  ["identifier_salt", "text"],
  ["subject", "text"],
  ["external_user_id", "text"],
  ["token", "text"],
  ["sd_jwt_vc", "text"],
  ["holder_key", "jsonb"],
  ["status_list", "integer"],
  ["status_idx", "integer"],
  ["verified_at", "timestamptz"],
  ["issued_at", "timestamptz"],
  ["expires_at", "timestamptz"],
  ["method", "text"],
] as const;
const NAMES = COLUMNS.map(([c]) => c).join(", ");

const values = (p: NewProof): unknown[] => [
  p.id,
  p.scope.tenantId,
  p.scope.env,
  p.kid,
  p.type,
  p.channel,
  p.identifierHash,
  p.identifierSalt,
  p.subject,
  p.externalUserId ?? null,
  p.token,
  p.sdJwtVc ?? null,
  p.holderKey ? JSON.stringify(p.holderKey) : null,
  p.statusList,
  p.statusIdx,
  p.verifiedAt,
  p.issuedAt,
  p.expiresAt,
  p.method,
];

const issued = (p: NewProof) =>
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
      tokenSha256: tokenSha256(p.token),
      env: p.scope.env,
      subject: p.subject,
      format: p.sdJwtVc ? "sd-jwt-vc" : "jwt",
      statusList: `${p.scope.env}-${p.statusList}`,
      statusIdx: p.statusIdx,
    }),
  );

/** Stores one proof with its event; false when a proof with this id already exists. */
export async function insertProof(q: Queryable, p: NewProof): Promise<boolean> {
  const r = await writeWithEvents(
    q,
    S,
    `INSERT INTO ${S}.proofs (${NAMES}) VALUES (${COLUMNS.map((_, i) => `$${i + 1}`).join(", ")}) ON CONFLICT (id) DO NOTHING RETURNING id`,
    values(p),
    [issued(p)],
    p.issuedAt,
  );
  return r.rowCount === 1;
}

/**
 * Stores proofs of distinct ids with their events in one statement (the columns as arrays, each
 * element as text cast to its column's type: both drivers send text arrays alike); per proof,
 * false when a proof with its id already exists.
 */
export async function insertProofs(q: Queryable, ps: NewProof[]): Promise<boolean[]> {
  const r = await writeRowsWithEvents<{ id: string }>(
    q,
    S,
    `INSERT INTO ${S}.proofs (${NAMES})
       SELECT ${COLUMNS.map(([c, type]) => `${c}::${type}`).join(", ")}
         FROM unnest(${COLUMNS.map((_, i) => `$${i + 1}::text[]`).join(", ")}) AS u(${NAMES})
       ON CONFLICT (id) DO NOTHING RETURNING id`,
    textColumns(ps.map(values)),
    ps.map(issued),
    latest(ps.map((p) => p.issuedAt)),
  );
  const written = new Set(r.rows.map((x) => x.id));
  return ps.map((p) => written.has(p.id));
}
