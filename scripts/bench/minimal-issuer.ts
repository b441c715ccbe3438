// The minimal durable issuer (issue 33): the floor a proof costs on this machine, measured by the
// bench right beside ICV with the same client (loadCreateAndVerify) on the same database server.
// One node:http process, one pg pool, node:crypto RS256. Create is one INSERT; test-verify is one
// statement (a CTE: the row to verified, the proof row, an outbox event, in one transaction),
// then one signature. It keeps what a durable issuer must (the tenant's key checked in constant
// time, every read scoped to the tenant, nothing answered before it is committed) and nothing else.
// With ISSUER_PGLITE_DIR instead of DATABASE_URL it runs on an embedded PGlite in that directory,
// in its own process as ICV's embedded default does: the floor of the embedded figure.
//   DATABASE_URL=… ISSUER_KEY=… node --import tsx scripts/bench/minimal-issuer.ts   → prints "listening PORT"
import { createHash, generateKeyPairSync, randomBytes, sign, timingSafeEqual } from "node:crypto";
import http from "node:http";
import { PGlite } from "@electric-sql/pglite";
import pg from "pg";

const url = process.env.DATABASE_URL;
const liteDir = process.env.ISSUER_PGLITE_DIR;
const apiKey = process.env.ISSUER_KEY;
if (!(url || liteDir) || !apiKey) throw new Error("DATABASE_URL (or ISSUER_PGLITE_DIR) and ISSUER_KEY are required");
const TENANT = "t_bench";
const keyHash = createHash("sha256").update(apiKey).digest();
// one interface for both: a pg pool, or PGlite with the shared buffers ICV's embedded default sets (platform/database.ts)
type Rows = { rows: Record<string, any>[] };
const pool: { query(sql: string, params?: unknown[]): Promise<Rows>; end(): Promise<void> } = liteDir
  ? await PGlite.create(liteDir, { postgresqlconf: "shared_buffers = 16MB\n" }).then((lite) => ({
      query: (sql: string, params?: unknown[]) => lite.query<Record<string, any>>(sql, params),
      end: () => lite.close(),
    }))
  : new pg.Pool({ connectionString: url, max: Number(process.env.ISSUER_POOL ?? 20) });
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });

for (const ddl of [
  `CREATE TABLE IF NOT EXISTS verifications (id text PRIMARY KEY, tenant_id text NOT NULL, type text NOT NULL, channel text NOT NULL,
     identifier text NOT NULL, status text NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), verified_at timestamptz)`,
  `CREATE TABLE IF NOT EXISTS proofs (id text PRIMARY KEY, verification_id text NOT NULL UNIQUE, tenant_id text NOT NULL,
     issued_at timestamptz NOT NULL, expires_at timestamptz NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS outbox (id bigserial PRIMARY KEY, event_type text NOT NULL, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`,
])
  await pool.query(ddl);

const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
const HEADER = b64({ alg: "RS256", typ: "JWT", kid: "bench" });

function authorized(req: http.IncomingMessage): boolean {
  const given = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1] ?? "";
  return timingSafeEqual(createHash("sha256").update(given).digest(), keyHash);
}

function reply(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

async function readJson(req: http.IncomingMessage): Promise<Record<string, unknown>> {
  let text = "";
  for await (const chunk of req) {
    text += chunk;
    if (text.length > 16_384) throw new Error("too large");
  }
  return JSON.parse(text) as Record<string, unknown>;
}

const VERIFY = `
  WITH v AS (
    UPDATE verifications SET status = 'verified', verified_at = now()
     WHERE id = $1 AND tenant_id = $2 AND status = 'pending'
     RETURNING id, type, channel, identifier, verified_at),
  p AS (
    INSERT INTO proofs (id, verification_id, tenant_id, issued_at, expires_at)
    SELECT $3, v.id, $2, now(), now() + interval '365 days' FROM v
    RETURNING id, issued_at, expires_at),
  o AS (
    INSERT INTO outbox (event_type, payload)
    SELECT 'verification.verified', jsonb_build_object('id', v.id, 'tenant_id', $2::text, 'proof_id', p.id) FROM v, p)
  SELECT v.id, v.type, v.channel, v.identifier, v.verified_at, p.id AS proof_id, p.issued_at, p.expires_at FROM v, p`;

async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  if (req.method !== "POST") return reply(res, 405, { error: "method" });
  if (!authorized(req)) return reply(res, 401, { error: "unauthorized" });
  if (req.url === "/api/v1/verifications") {
    const body = await readJson(req);
    const { type, channel, identifier } = body;
    if (typeof type !== "string" || typeof channel !== "string" || typeof identifier !== "string") return reply(res, 400, { error: "validation_error" });
    const id = `ver_${randomBytes(12).toString("hex")}`;
    await pool.query("INSERT INTO verifications (id, tenant_id, type, channel, identifier, status) VALUES ($1, $2, $3, $4, $5, 'pending')", [
      id,
      TENANT,
      type,
      channel,
      identifier,
    ]);
    return reply(res, 201, { id, status: "pending" });
  }
  const m = /^\/api\/v1\/verifications\/(ver_[0-9a-f]{24})\/test-verify$/.exec(req.url ?? "");
  if (!m) return reply(res, 404, { error: "not_found" });
  req.resume();
  const r = await pool.query(VERIFY, [m[1], TENANT, `prf_${randomBytes(12).toString("hex")}`]);
  const v = r.rows[0];
  if (!v) return reply(res, 409, { error: "invalid_state" });
  const claims = {
    iss: "bench",
    sub: v.proof_id,
    iat: Math.floor(v.issued_at.getTime() / 1000),
    exp: Math.floor(v.expires_at.getTime() / 1000),
    tenant_id: TENANT,
    type: v.type,
    channel: v.channel,
    identifier_hash: createHash("sha256").update(v.identifier).digest("hex"),
    verified_at: v.verified_at.toISOString(),
  };
  const input = `${HEADER}.${b64(claims)}`;
  const token = `${input}.${sign("sha256", Buffer.from(input), privateKey).toString("base64url")}`;
  return reply(res, 200, { id: v.id, status: "verified", proof_token: token });
}

const server = http.createServer((req, res) => {
  handle(req, res).catch((e: Error) => {
    if (!res.headersSent) reply(res, 500, { error: e.message.slice(0, 100) });
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  const addr = server.address();
  process.stdout.write(`listening ${typeof addr === "object" && addr ? addr.port : 0}\n`);
});
process.on("SIGTERM", () => {
  server.close();
  void pool.end().finally(() => process.exit(0));
});
