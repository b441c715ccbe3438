// The in-process path between co-hosted services: unary calls reach the handler directly with the
// typed message (no encoding, no HTTP framing), and still go through the callee's allow-list, its
// error mapping and metrics, the caller's deadline and the callee's shutdown.
import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { IssueProofRequestSchema, ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import { proofCallers } from "../../../services/proof/src/callers.ts";
import { AppError } from "../src/errors.ts";
import { createLogger } from "../src/logger.ts";
import { metricsText } from "../src/metrics.ts";
import { rpcClient } from "../src/rpc.ts";
import { startServiceHost, type ServiceHost } from "../src/service-host.ts";
import { testTls, type TestTls } from "./support/tls.ts";

let tls: TestTls;
let proof: ServiceHost;
/** What the handlers saw, per call. */
const seen: Array<{ proofId: string; type: string; caller: string | null }> = [];
const requests: unknown[] = [];
let release: (() => void) | undefined;

const failure = async (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as ConnectError,
  );

beforeAll(async () => {
  tls = await testTls();
  proof = await startServiceHost({
    name: "icv.proof.v1.ProofService",
    host: "127.0.0.1",
    port: 0,
    logger: createLogger({ level: "silent" }),
    identity: await tls.identity("proof"),
    callers: proofCallers,
    shutdownTimeoutMs: 200,
    routes: (router) =>
      router.service(ProofService, {
        async issueProof(req, ctx) {
          seen.push({ proofId: req.proofId, type: req.type, caller: ctx.requestHeader.get("icv-local-caller") });
          requests.push(req);
          if (req.proofId === "slow") await new Promise<void>((r) => (release = r));
          if (req.proofId === "missing") throw new AppError("not_found", "no such verification");
          return { token: `jwt-for-${req.proofId}` };
        },
      }),
  });
});
afterAll(async () => {
  release?.();
  await proof?.close();
  tls.cleanup();
});

describe("a co-hosted unary call", () => {
  it("hands the typed request to the handler and answers its typed response", async () => {
    const verification = await tls.identity("verification");
    const r = await rpcClient(ProofService, proof.url, verification).issueProof({ proofId: "ver_1", type: "phone" });
    expect(r.token).toBe("jwt-for-ver_1");
    expect(r.$typeName).toBe("icv.proof.v1.IssueProofResponse");
    expect(seen.at(-1)).toEqual({ proofId: "ver_1", type: "phone", caller: "verification" });
  });

  it("passes the caller's message object itself: nothing is encoded or decoded in between", async () => {
    const msg = create(IssueProofRequestSchema, { proofId: "ver_3", type: "email" });
    await rpcClient(ProofService, proof.url, await tls.identity("verification")).issueProof(msg);
    expect(requests.at(-1)).toBe(msg);
  });

  it("is refused for a caller not on the allow-list, before the handler runs", async () => {
    const before = seen.length;
    const e = await failure(rpcClient(ProofService, proof.url, await tls.identity("session")).issueProof({ proofId: "ver_2" }));
    expect(e).toBeInstanceOf(ConnectError);
    expect((e as ConnectError).code).toBe(Code.PermissionDenied);
    expect(seen.length).toBe(before);
  });

  it("carries the domain error's code as the network path does, and counts the call in the metrics", async () => {
    const e = await failure(rpcClient(ProofService, proof.url, await tls.identity("verification")).issueProof({ proofId: "missing" }));
    expect((e as ConnectError).code).toBe(Code.NotFound);
    expect((e as ConnectError).metadata.get("icv-error-code")).toBe("not_found");
    expect((await metricsText()).body).toMatch(/icv_rpc_server_requests_total\{service="proof",method="ProofService\/IssueProof",code="not_found"\} [1-9]/);
  });

  it("ends with DEADLINE_EXCEEDED when the caller's deadline passes first", async () => {
    const client = rpcClient(ProofService, proof.url, await tls.identity("verification"));
    const started = performance.now();
    const e = await failure(client.issueProof({ proofId: "slow" }, { timeoutMs: 100 }));
    expect((e as ConnectError).code).toBe(Code.DeadlineExceeded);
    expect(performance.now() - started).toBeLessThan(2_000);
    release?.();
  });

  it("ends with UNAVAILABLE when the service shuts down before the handler answers", async () => {
    const client = rpcClient(ProofService, proof.url, await tls.identity("verification"));
    const pending = failure(client.issueProof({ proofId: "slow" }));
    await sleep(20);
    await proof.close();
    const e = await pending;
    expect((e as ConnectError).code).toBe(Code.Unavailable);
  });
});
