// Internal teams on gRPC (docs/internal-clients.md), against the stack as `npm start` runs it: a
// team's certificate made by the admin CLI, plain gRPC (grpc-js) on the verification service's
// port, the allow-list of INTERNAL_CLIENTS_FILE with a SIGHUP reload, the tenant scope, the
// per-client rate limit, the audit line and counter, and reflection.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type DescMessage, type DescMethodUnary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { VerificationService } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import {
  ServerReflectionRequestSchema,
  ServerReflectionResponseSchema,
  type ServerReflectionResponse,
} from "@icv/contracts/gen/grpc/reflection/v1/reflection_pb.ts";
import { createCa, issueCertificate, metricsText } from "@icv/platform";
import { grpcCredentials, targetName } from "../../packages/platform/test/support/tls.ts";
import { api, startStack, type Stack } from "../support/stack.ts";

const ROOT = path.resolve(import.meta.dirname, "..", "..");
const VS = "icv.verification.v1.VerificationService";
const dir = mkdtempSync(path.join(tmpdir(), "icv-clients-"));
const clientsFile = path.join(dir, "internal-clients.yaml");
// a name of this run's own: with REDIS_URL its budget is counted in Redis, across runs of a minute
const RISK = `risk-${Date.now().toString(36)}`;
const writeClients = (extra: string[] = []) =>
  writeFileSync(
    clientsFile,
    [
      "# the teams that call ICV over gRPC",
      "clients:",
      "  - name: billing",
      "    allow:",
      `      - ${VS}/ExportVerifications`,
      `      - ${VS}/GetVerification`,
      ...extra.map((r) => `      - ${r}`),
      `  - name: ${RISK}`,
      "    rate_per_minute: 2",
      "    allow:",
      `      - ${VS}/ExportVerifications`,
    ].join("\n"),
  );

let stack: Stack;
const logs: string[] = [];
let tenant: { tenantId: string; testKey: string };
let other: { tenantId: string; testKey: string };
const created: string[] = [];
const clients: grpc.Client[] = [];
const certs: Record<string, { cert: string; key: string; ca: string }> = {};

/** The admin CLI as a team's operator runs it, on the stack's data dir. */
async function issue(name: string) {
  const out = path.join(dir, "certs");
  const { stdout } = await promisify(execFile)("npx", ["tsx", "scripts/admin.ts", "internal-client", "cert", "--name", name, "--out", out, "--json"], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: stack.dataDir, LOG_LEVEL: "silent" },
    timeout: 60_000,
  });
  const r = JSON.parse(stdout) as { cert: string; key: string; ca: string; not_after: string };
  expect(new Date(r.not_after).getTime() - Date.now()).toBeGreaterThan(89 * 24 * 3600_000);
  certs[name] = { cert: readFileSync(r.cert, "utf8"), key: readFileSync(r.key, "utf8"), ca: readFileSync(r.ca, "utf8") };
}

const as = (name: string) => grpcCredentials(certs[name].ca, certs[name]);
const port = () => Number(new URL(stack.services.verification.url).port);
function channel(creds: grpc.ChannelCredentials): grpc.Client {
  const c = new grpc.Client(`127.0.0.1:${port()}`, creds, targetName("verification"));
  clients.push(c);
  return c;
}

type Answer = { code: grpc.status; details?: string; body?: any };
function call<I extends DescMessage, O extends DescMessage>(creds: grpc.ChannelCredentials, method: DescMethodUnary<I, O>, input: unknown): Promise<Answer> {
  return new Promise((resolve) =>
    channel(creds).makeUnaryRequest(
      `/${method.parent.typeName}/${method.name}`,
      (m: unknown) => Buffer.from(toBinary(method.input, m as never)),
      (b: Buffer) => fromBinary(method.output, b),
      create(method.input, input as never) as unknown,
      new grpc.Metadata(),
      { deadline: Date.now() + 10_000 },
      (err, res) => resolve(err ? { code: err.code, details: err.details } : { code: grpc.status.OK, body: res }),
    ),
  );
}

const scope = (t = tenant) => ({ tenantId: t.tenantId, environment: Environment.TEST });
const exportAll = async (name: string, limit: number) => {
  const ids: string[] = [];
  let cursor = "";
  for (let i = 0; i < 20; i++) {
    const r = await call(as(name), VerificationService.method.exportVerifications, { scope: scope(), limit, cursor });
    expect(r.code, r.details).toBe(grpc.status.OK);
    ids.push(...r.body.verifications.map((v: { id: string }) => v.id));
    cursor = r.body.nextCursor;
    if (!cursor) return ids;
  }
  throw new Error("the cursor never ended");
};
const records = () => logs.flatMap((l) => l.split("\n").filter(Boolean)).map((l) => JSON.parse(l) as Record<string, any>);
async function until(what: string, check: () => Promise<boolean>, ms = 10_000) {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) if (await check()) return;
  throw new Error(`timed out waiting for ${what}`);
}

beforeAll(async () => {
  writeClients();
  stack = await startStack({ INTERNAL_CLIENTS_FILE: clientsFile, LOG_LEVEL: "info" }, undefined, { logTo: { write: (l: string) => void logs.push(l) } });
  tenant = await stack.tenant("Billing export");
  other = await stack.tenant("Someone else");
  for (let i = 0; i < 5; i++) {
    const r = await api(stack.url, tenant.testKey).post("/api/v1/verifications", { type: "email", channel: "email", identifier: `user${i}@example.com` });
    expect(r.status, r.text).toBe(201);
    created.push(r.body.id);
  }
  await api(stack.url, other.testKey).post("/api/v1/verifications", { type: "email", channel: "email", identifier: "other@example.com" });
  await Promise.all([issue("billing"), issue(RISK), issue("support")]);
});
afterAll(async () => {
  for (const c of clients) c.close();
  await stack?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("an internal team on gRPC", () => {
  it("npm start refuses a bad client file with one line naming the file, the line and the reason", async () => {
    const bad = path.join(dir, "bad.yaml");
    writeFileSync(bad, `clients:\n  - name: billing\n    allow:\n      - ${VS}/ExportVerification\n`);
    const r = await promisify(execFile)(path.join(ROOT, "node_modules/.bin/node"), ["--import", "tsx", "scripts/start-all.ts"], {
      cwd: ROOT,
      env: { ...process.env, DATA_DIR: path.join(dir, "refused"), PORT: "0", ADMIN_PORT: "0", INTERNAL_CLIENTS_FILE: bad, LOG_LEVEL: "silent" },
      timeout: 60_000,
    }).then(
      () => ({ code: 0, stderr: "" }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`invalid configuration: INTERNAL_CLIENTS_FILE ${bad}:4: client "billing": ${VS} has no method ExportVerification\n`);
  });

  it("calls an allowed RPC with the CLI's certificate and pages through a tenant's verifications with the cursor", async () => {
    expect(await exportAll("billing", 2)).toEqual(created);
    const one = await call(as("billing"), VerificationService.method.getVerification, { scope: scope(), id: created[0] });
    expect(one.code).toBe(grpc.status.OK);
    expect(one.body.verification.id).toBe(created[0]);
  });

  it("sees only what the scope names; a missing scope is INVALID_ARGUMENT", async () => {
    const theirs = await call(as("billing"), VerificationService.method.exportVerifications, { scope: scope(other), limit: 100 });
    expect(theirs.body.verifications.map((v: { id: string }) => v.id)).not.toContain(created[0]);
    expect(theirs.body.verifications).toHaveLength(1);
    const cross = await call(as("billing"), VerificationService.method.getVerification, { scope: scope(other), id: created[0] });
    expect(cross.code).toBe(grpc.status.NOT_FOUND);
    for (const input of [{ limit: 10 }, { scope: { tenantId: tenant.tenantId }, limit: 10 }]) {
      const r = await call(as("billing"), VerificationService.method.exportVerifications, input);
      expect(r.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(r.details).toMatch(/tenant scope required/);
    }
  });

  it("is refused another RPC, a certified client missing from the file is refused, and no certificate gets no connection", async () => {
    const list = { scope: scope(), page: { page: 1, limit: 10 } };
    expect((await call(as("billing"), VerificationService.method.listVerifications, list)).code).toBe(grpc.status.PERMISSION_DENIED);
    expect((await call(as("support"), VerificationService.method.exportVerifications, { scope: scope() })).code).toBe(grpc.status.PERMISSION_DENIED);
    expect((await call(grpcCredentials(certs.billing.ca), VerificationService.method.exportVerifications, { scope: scope() })).code).toBe(
      grpc.status.UNAVAILABLE,
    );
    // another service's RPC: the proof service refuses the team too
    const proof = new grpc.Client(`127.0.0.1:${new URL(stack.services.proof.url).port}`, as("billing"), targetName("proof"));
    clients.push(proof);
    const m = ProofService.method.getJwks;
    const code = await new Promise<grpc.status>((resolve) =>
      proof.makeUnaryRequest(
        `/${m.parent.typeName}/${m.name}`,
        (x: unknown) => Buffer.from(toBinary(m.input, x as never)),
        (b: Buffer) => fromBinary(m.output, b),
        create(m.input, {}) as unknown,
        (err) => resolve(err ? err.code : grpc.status.OK),
      ),
    );
    expect(code).toBe(grpc.status.PERMISSION_DENIED);
  });

  it("a certificate of another CA or an expired one fails the handshake", async () => {
    const foreignCa = await createCa("someone else's CA");
    const foreign = await issueCertificate(foreignCa, "billing");
    const ca = { cert: readFileSync(path.join(stack.dataDir, "tls", "ca.crt"), "utf8"), key: readFileSync(path.join(stack.dataDir, "tls", "ca.key"), "utf8") };
    const expired = await issueCertificate(ca, "billing", { notBefore: new Date(Date.now() - 3 * 86400_000), notAfter: new Date(Date.now() - 86400_000) });
    for (const c of [foreign, expired]) {
      const r = await call(grpcCredentials(certs.billing.ca, c), VerificationService.method.exportVerifications, { scope: scope() });
      expect(r.code).toBe(grpc.status.UNAVAILABLE);
    }
  });

  it("logs each call (client, RPC, tenant, outcome, ms; never the payload), counts it by caller, and logs a refusal once a minute", async () => {
    const list = { scope: scope(), page: { page: 1, limit: 10 }, externalUserId: "secret-user-ref" };
    for (let i = 0; i < 3; i++) await call(as("billing"), VerificationService.method.listVerifications, list);
    const audit = records().filter((r) => r.msg === "internal client call" && r.caller === "billing");
    expect(audit.length).toBeGreaterThan(0);
    const ok = audit.find((r) => r.rpc === `${VS}/ExportVerifications` && r.outcome === "ok");
    expect(ok).toMatchObject({ caller: "billing", tenant: tenant.tenantId, environment: "test" });
    expect(typeof ok?.ms).toBe("number");
    expect(audit.find((r) => r.outcome === "invalid_argument")).toBeDefined();
    const refused = records().filter(
      (r) => r.msg === "rpc refused: caller not on the allow-list" && r.caller === "billing" && r.method === `${VS}/ListVerifications`,
    );
    expect(refused).toHaveLength(1);
    const all = logs.join("\n");
    for (const secret of ["secret-user-ref", "user0@example.com", certs.billing.key.split("\n")[1]]) expect(all).not.toContain(secret);
    const metrics = (await metricsText()).body;
    expect(metrics).toMatch(
      /icv_rpc_requests_total\{caller="billing",service="verification",method="VerificationService\/ExportVerifications",code="ok"\} \d+/,
    );
    expect(metrics).toMatch(
      /icv_rpc_requests_total\{caller="billing",service="verification",method="VerificationService\/ListVerifications",code="permission_denied"\} [3-9]/,
    );
  });

  it("is rate limited per client name", async () => {
    const codes: grpc.status[] = [];
    for (let i = 0; i < 4; i++) codes.push((await call(as(RISK), VerificationService.method.exportVerifications, { scope: scope(), limit: 1 })).code);
    expect(codes.slice(0, 2)).toEqual([grpc.status.OK, grpc.status.OK]);
    expect(codes.slice(2)).toEqual([grpc.status.RESOURCE_EXHAUSTED, grpc.status.RESOURCE_EXHAUSTED]);
    // another client's budget is its own
    expect((await call(as("billing"), VerificationService.method.exportVerifications, { scope: scope(), limit: 1 })).code).toBe(grpc.status.OK);
  });

  it("lists the services through the reflection API and describes them", async () => {
    const client = channel(as("billing"));
    const stream = client.makeBidiStreamRequest(
      "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
      (m: unknown) => Buffer.from(toBinary(ServerReflectionRequestSchema, m as never)),
      (b: Buffer) => fromBinary(ServerReflectionResponseSchema, b),
      new grpc.Metadata(),
    );
    const answers: ServerReflectionResponse[] = [];
    const done = new Promise<void>((resolve, reject) => {
      stream.on("data", (r: ServerReflectionResponse) => answers.push(r));
      stream.on("end", resolve);
      stream.on("error", reject);
    });
    // grpcurl asks v1 first, older tools v1alpha: both answer
    const alpha = await new Promise<string[]>((resolve, reject) => {
      const s = client.makeBidiStreamRequest(
        "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
        (m: unknown) => Buffer.from(toBinary(ServerReflectionRequestSchema, m as never)),
        (b: Buffer) => fromBinary(ServerReflectionResponseSchema, b),
        new grpc.Metadata(),
      );
      s.on("data", (r: ServerReflectionResponse) =>
        resolve(r.messageResponse.case === "listServicesResponse" ? r.messageResponse.value.service.map((x) => x.name) : []),
      );
      s.on("error", reject);
      s.end(create(ServerReflectionRequestSchema, { messageRequest: { case: "listServices", value: "" } }));
    });
    expect(alpha).toContain(VS);
    stream.write(create(ServerReflectionRequestSchema, { messageRequest: { case: "listServices", value: "" } }));
    stream.write(create(ServerReflectionRequestSchema, { messageRequest: { case: "fileContainingSymbol", value: `${VS}.ExportVerifications` } }));
    stream.end();
    await done;
    const [list, file] = answers.map((a) => a.messageResponse);
    expect(list.case === "listServicesResponse" && list.value.service.map((s) => s.name)).toEqual(
      expect.arrayContaining([VS, "icv.verification.v1.ProfileService", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection"]),
    );
    expect(file.case).toBe("fileDescriptorResponse");
    const names = file.case === "fileDescriptorResponse" ? file.value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b).name) : [];
    expect(names).toEqual(
      expect.arrayContaining(["icv/verification/v1/verification_service.proto", "icv/common/v1/scope.proto", "google/protobuf/timestamp.proto"]),
    );
  });

  it("is allowed the RPC after a SIGHUP reload that adds it; a bad reload keeps the clients in use and logs the line", async () => {
    const list = { scope: scope(), page: { page: 1, limit: 10 } };
    writeClients([`${VS}/ListVerifications`]);
    process.kill(process.pid, "SIGHUP");
    await until("the reload", async () => (await call(as("billing"), VerificationService.method.listVerifications, list)).code === grpc.status.OK);
    writeFileSync(clientsFile, `clients:\n  - name: billing\n    allow:\n      - ${VS}/NoSuchMethod\n`);
    process.kill(process.pid, "SIGHUP");
    await until("the refusal to reload", async () => records().some((r) => r.msg?.startsWith("internal clients: the file is not valid")));
    expect(records().find((r) => r.msg?.startsWith("internal clients: the file is not valid"))).toMatchObject({
      file: clientsFile,
      line: 4,
      reason: expect.stringContaining("has no method NoSuchMethod"),
    });
    expect((await call(as("billing"), VerificationService.method.listVerifications, list)).code).toBe(grpc.status.OK);
  });
});
