// A database error raised while a caller's data is in the statement (a phone number, a code, a
// deep link, the code's HMAC) is logged by code, constraint and statement name only: the values
// never reach the log, on PGlite and on Postgres (DATABASE_URL) alike.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import { openDatabase, type Database } from "../src/database.ts";
import { fromConnectError } from "../src/errors.ts";
import { createLogger } from "../src/logger.ts";
import { rpcClient } from "../src/rpc.ts";
import { startServiceHost } from "../src/service-host.ts";
import { allow } from "../src/callers.ts";
import type { TlsIdentity } from "../src/tls.ts";
import { maybeFreshPostgres, type FreshPostgres } from "../../../test/support/fresh-postgres.ts";
import { lineCollector } from "./support/log-lines.ts";
import { testTls, type TestTls } from "./support/tls.ts";

const PHONE = "+37069199199";
const CODE = "QX7K2M";
const LINK = "https://t.me/icv_bot?start=QX7K2M";
const HMAC = "9d5ed678fe57bcca610140957afab571";
const SECRETS = [PHONE, "37069199199", CODE, LINK, HMAC];

let pgdb: FreshPostgres | undefined;
let db: Database;
let tls: TestTls;
let proofId: TlsIdentity;
let gatewayId: TlsIdentity;

beforeAll(async () => {
  tls = await testTls();
  [proofId, gatewayId] = await Promise.all([tls.identity("proof"), tls.identity("gateway")]);
  pgdb = await maybeFreshPostgres();
  db = await openDatabase({ url: pgdb?.url, dataDir: "memory://" });
  await db.exec(
    "CREATE TABLE challenges (phone text NOT NULL, code text NOT NULL, deep_link text, code_hmac text, CONSTRAINT challenges_code_hmac_key UNIQUE (code_hmac))",
  );
});
afterAll(async () => {
  await db?.close();
  await pgdb?.drop();
  tls?.cleanup();
});

/** Runs `fail` inside an RPC handler of a service host and answers what the caller got and what was logged. */
async function failingRpc(fail: () => Promise<unknown>) {
  const out = lineCollector();
  const host = await startServiceHost({
    name: "icv.test.v1.TestService",
    host: "127.0.0.1",
    port: 0,
    logger: createLogger({ level: "info", destination: out }),
    identity: proofId,
    callers: [
      allow(ProofService, {
        getJwks: ["gateway"],
        issueProof: [],
        validateProof: [],
        getProofStatus: [],
        getProofStatuses: [],
        revokeProof: [],
        suspendProof: [],
        reinstateProof: [],
        getStatusList: [],
        getRevocationList: [],
        rotateSigningKey: [],
      }),
    ],
    routes: (router) =>
      router.service(ProofService, {
        async getJwks() {
          await fail();
          return { keys: [] };
        },
      }),
  });
  try {
    const err = await rpcClient(ProofService, host.url, gatewayId)
      .getJwks({})
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    return { caller: fromConnectError(err), out };
  } finally {
    await host.close();
  }
}

const insert = "INSERT INTO challenges (phone, code, deep_link, code_hmac) VALUES ($1, $2, $3, $4)";

describe("database errors in the logs", () => {
  it("a unique violation is logged with its SQLSTATE, constraint and statement name, without the values", async () => {
    await db.query(insert, [PHONE, CODE, LINK, HMAC]);
    const { caller, out } = await failingRpc(() => db.query(insert, [PHONE, CODE, LINK, HMAC]));
    expect(caller.code).toBe("internal_error");
    const failed = out.records().filter((r) => r.msg === "rpc failed");
    expect(failed).toHaveLength(1);
    expect(failed[0].err).toMatchObject({
      type: "DatabaseError",
      sqlstate: "23505",
      constraint: "challenges_code_hmac_key",
      statement: expect.stringMatching(/^icv_[0-9a-f]{20}$/),
    });
    for (const s of SECRETS) expect(out.lines.join("\n"), s).not.toContain(s);
  });

  it("a failed cast whose server message quotes the value is logged without it", async () => {
    const { out } = await failingRpc(() => db.query("SELECT $1::int AS n, $2::text AS c", [LINK, PHONE]));
    const failed = out.records().filter((r) => r.msg === "rpc failed");
    expect(failed[0].err).toMatchObject({ type: "DatabaseError", sqlstate: "22P02" });
    for (const s of SECRETS) expect(out.lines.join("\n"), s).not.toContain(s);
  });

  it("the error thrown to the code keeps the SQLSTATE as `code` (nothing that checks it breaks)", async () => {
    const e = (await db.query(insert, [PHONE, CODE, LINK, HMAC]).catch((x: unknown) => x)) as {
      code: string;
      message: string;
      name: string;
    };
    expect([e.name, e.code]).toEqual(["DatabaseError", "23505"]);
    expect(e.message).not.toContain(PHONE);
    expect(JSON.stringify(e)).not.toContain(PHONE);
  });
});
