// Token Status Lists and Suspended (issue 26): every proof's list shows its state (0 valid,
// 1 revoked, 2 suspended), signed by the proof's own key set, built on change and cached in
// between; indexes are never handed out twice, by any number of processes; SuspendProof and
// ReinstateProof (the verification service's only) move a proof in and out of suspension.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { getListFromStatusListJWT } from "@sd-jwt/jwt-status-list";
import { createLocalJWKSet, jwtVerify, type JWK } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { createLogger, fromConnectError, ManualClock, newId, openServiceDatabase, parseConfig } from "@icv/platform";
import { maybeFreshPostgres } from "../../../test/support/fresh-postgres.ts";
import { jwtParts } from "../../../test/support/sd-jwt.ts";
import { BLOCK, LIST_SIZE, StatusIndexes } from "../src/status-lists.ts";
import { ProofStore } from "../src/store/proofs.ts";
import { startTestProofService, type TestProofService } from "./support/proof-service.ts";

const clock = new ManualClock(new Date(Math.floor(Date.now() / 1000) * 1000));
let svc: TestProofService;
beforeAll(async () => {
  svc = await startTestProofService(clock);
});
afterAll(() => svc?.close());

const test = { tenantId: "ten_A", environment: Environment.TEST };
const live = { tenantId: "ten_A", environment: Environment.LIVE };

async function issue(scope = test) {
  const r = await svc.client.issueProof({
    scope,
    proofId: newId("verification"),
    type: "domain",
    channel: "dns",
    identifier: "example.com",
    method: "dns_txt",
  });
  const { sub, status } = jwtParts(r.token).payload as { sub: string; status: { status_list: { idx: number; uri: string } } };
  return { proofId: sub, idx: status.status_list.idx, listId: status.status_list.uri.split("/").pop()!, uri: status.status_list.uri };
}

const listJwt = async (listId: string) => (await svc.client.getStatusList({ listId })).jwt;
const statusOf = async (p: { listId: string; idx: number }) => getListFromStatusListJWT(await listJwt(p.listId)).getStatus(p.idx);

async function errorCode(p: Promise<unknown>): Promise<string> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e, "expected the call to fail").toBeInstanceOf(ConnectError);
  return fromConnectError(e).code;
}

describe("a status list", () => {
  it("is the draft's JWT, signed by the proof's own key set, at the uri the proof names", async () => {
    const p = await issue();
    expect(p.uri).toMatch(/^http:\/\/localhost:\d+\/api\/v1\/proofs\/status-lists\/test-0$/);
    const jwt = await listJwt(p.listId);
    const { header, payload } = jwtParts(jwt);
    expect(header).toMatchObject({ typ: "statuslist+jwt", alg: "RS256" });
    expect(payload).toEqual({ sub: p.uri, iat: expect.any(Number), exp: payload.iat + 86_400, ttl: 300, status_list: { bits: 2, lst: expect.any(String) } });
    const keys = async (environment: Environment) => createLocalJWKSet({ keys: (await svc.client.getJwks({ environment })).keys as unknown as JWK[] });
    await expect(jwtVerify(jwt, await keys(Environment.TEST), { typ: "statuslist+jwt" })).resolves.toBeDefined();
    await expect(jwtVerify(jwt, await keys(Environment.LIVE))).rejects.toThrow(); // a test list is never signed by a live key
    const l = await issue(live);
    expect(l.listId).toBe("live-0");
    await expect(jwtVerify(await listJwt(l.listId), await keys(Environment.LIVE))).resolves.toBeDefined();
    expect(getListFromStatusListJWT(jwt).statusList).toHaveLength(LIST_SIZE);
  });

  it("shows valid (0), suspended (2), valid again once reinstated, and revoked (1), which stays", async () => {
    const p = await issue();
    expect(await statusOf(p)).toBe(0);
    await svc.client.suspendProof({ scope: test, proofId: p.proofId, reason: "record_missing" });
    expect(await statusOf(p)).toBe(2);
    await svc.client.reinstateProof({ scope: test, proofId: p.proofId });
    expect(await statusOf(p)).toBe(0);
    await svc.client.suspendProof({ scope: test, proofId: p.proofId, reason: "unreachable" });
    await svc.client.revokeProof({ scope: test, proofId: p.proofId, reason: "fraud" });
    expect(await statusOf(p)).toBe(1);
    expect(await errorCode(svc.client.reinstateProof({ scope: test, proofId: p.proofId }))).toBe("invalid_state");
    expect(await statusOf(p)).toBe(1);
  });

  it("is served from memory while nothing changes (the same JWT), and built again on a change", async () => {
    const p = await issue();
    const first = await listJwt(p.listId);
    clock.advance(5_000);
    expect(await listJwt(p.listId)).toBe(first);
    await Promise.all([issue(), issue()]); // issuing changes no entry (a new proof is 0)
    expect(await listJwt(p.listId)).toBe(first);
    await svc.client.revokeProof({ scope: test, proofId: p.proofId, reason: "other" });
    const after = await listJwt(p.listId);
    expect(after).not.toBe(first);
    expect(jwtParts(after).payload.iat).toBe(jwtParts(first).payload.iat + 5);
  });

  it("answers not_found for a list that does not exist and for ids that are not list ids", async () => {
    for (const listId of ["live-999", "test-1", "live-01", "live", "prod-0", "live--1", "", `live-${"9".repeat(12)}`]) {
      expect(await errorCode(svc.client.getStatusList({ listId })), listId).toBe("not_found");
    }
  });
});

describe("SuspendProof and ReinstateProof", () => {
  it("suspend and reinstate, idempotently, with the status object's fields", async () => {
    const p = await issue();
    clock.advance(1_000);
    const s = (await svc.client.suspendProof({ scope: test, proofId: p.proofId, reason: "record_mismatch" })).status!;
    expect(s).toMatchObject({ status: "suspended", isValid: false, isSuspended: true, isRevoked: false, suspendedReason: "record_mismatch" });
    expect(timestampDate(s.suspendedAt!)).toEqual(clock.now());
    clock.advance(1_000);
    const again = (await svc.client.suspendProof({ scope: test, proofId: p.proofId, reason: "unreachable" })).status!;
    expect(again).toEqual(s); // the original suspension
    expect((await svc.client.getProofStatus({ scope: test, proofId: p.proofId })).status).toEqual(s);
    const back = (await svc.client.reinstateProof({ scope: test, proofId: p.proofId })).status!;
    expect(back).toMatchObject({ status: "active", isValid: true, isSuspended: false });
    expect(back.suspendedAt).toBeUndefined();
    expect((await svc.client.reinstateProof({ scope: test, proofId: p.proofId })).status).toEqual(back);
  });

  it("refuses what it cannot do: another scope's proof, a revoked or expired proof, an unknown reason, and any caller but the verification service", async () => {
    const p = await issue();
    expect(await errorCode(svc.client.suspendProof({ scope: live, proofId: p.proofId, reason: "record_missing" }))).toBe("not_found");
    expect(await errorCode(svc.client.reinstateProof({ scope: { ...test, tenantId: "ten_B" }, proofId: p.proofId }))).toBe("not_found");
    expect(await errorCode(svc.client.suspendProof({ scope: test, proofId: p.proofId, reason: "because" }))).toBe("validation_error");
    const refused = await svc.asGateway.suspendProof({ scope: test, proofId: p.proofId, reason: "record_missing" }).catch((e: unknown) => e);
    expect(ConnectError.from(refused).code).toBe(Code.PermissionDenied);
    const refusedToo = await svc.asGateway.reinstateProof({ scope: test, proofId: p.proofId }).catch((e: unknown) => e);
    expect(ConnectError.from(refusedToo).code).toBe(Code.PermissionDenied);
    const short = await svc.client.issueProof({
      scope: test,
      proofId: newId("verification"),
      type: "domain",
      channel: "dns",
      identifier: "example.org",
      method: "dns_txt",
      expiresInSeconds: 60,
    });
    clock.advance(61_000);
    expect(await errorCode(svc.client.suspendProof({ scope: test, proofId: jwtParts(short.token).payload.sub, reason: "record_missing" }))).toBe(
      "invalid_state",
    );
    await svc.client.revokeProof({ scope: test, proofId: p.proofId, reason: "fraud" });
    expect(await errorCode(svc.client.suspendProof({ scope: test, proofId: p.proofId, reason: "record_missing" }))).toBe("invalid_state");
    expect((await svc.client.getProofStatus({ scope: test, proofId: p.proofId })).status).toMatchObject({ status: "revoked", isSuspended: false });
  });
});

describe("status-list indexes", () => {
  it("are never handed out twice by two processes on one database, a block at a time, in no telling order", async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "icv-status-indexes-"));
    const pg = await maybeFreshPostgres();
    const config = parseConfig({ DATA_DIR: dataDir, DATABASE_URL: pg?.url });
    const migrations = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "migrations");
    const db = await openServiceDatabase(config, "proof", migrations, createLogger({ level: "silent" }), { outbox: true });
    try {
      const store = new ProofStore(db);
      const [a, b] = [new StatusIndexes(store), new StatusIndexes(store)];
      const draw = (x: StatusIndexes, n: number) => Promise.all(Array.from({ length: n }, () => x.next("live")));
      const [fromA, fromB] = await Promise.all([draw(a, 2.5 * BLOCK), draw(b, 2.5 * BLOCK)]);
      const all = [...fromA, ...fromB].map((x) => x.list * LIST_SIZE + x.idx);
      expect(new Set(all).size).toBe(5 * BLOCK);
      // six blocks were taken (three each), no more: one statement per thousand proofs
      expect(await store.lastStatusBlock("live")).toBe(5 * BLOCK);
      // a block's indexes come out shuffled, not in issuing order
      const firstBlock = fromA.slice(0, BLOCK).map((x) => x.idx);
      expect(firstBlock).not.toEqual([...firstBlock].sort((x, y) => x - y));
      // the other environment has its own sequence
      expect(await a.next("test")).toMatchObject({ list: 0 });
    } finally {
      await db.close();
      await pg?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000); // a database of its own: PGlite starts and migrates slowly on a busy machine
});
