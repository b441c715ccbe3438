import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus as Status } from "@icv/contracts/gen/grpc/health/v1/health_pb.ts";
import { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import { AppError, fromConnectError } from "../src/errors.ts";
import { createLogger } from "../src/logger.ts";
import { checkHealth, rpcClient } from "../src/rpc.ts";
import { startServiceHost, type ServiceHost, type ServiceHostOptions } from "../src/service-host.ts";
import { allow } from "../src/callers.ts";
import type { TlsIdentity } from "../src/tls.ts";
import { lineCollector } from "./support/log-lines.ts";
import { grpcCredentials, targetName, testTls, type TestTls } from "./support/tls.ts";

const here = path.dirname(fileURLToPath(import.meta.url));
const HEALTH_PROTO = path.resolve(here, "../../../proto/grpc/health/v1/health.proto");
const NAME = "icv.test.v1.TestService";

// ---- a plain gRPC client (grpc-js), as Kubernetes probes and other languages' clients are

type HealthReply = { status: string };
interface PlainHealthClient extends grpc.Client {
  Check(req: { service: string }, cb: (err: grpc.ServiceError | null, res: HealthReply) => void): void;
  Watch(req: { service: string }): grpc.ClientReadableStream<HealthReply>;
}
const healthPkg = grpc.loadPackageDefinition(protoLoader.loadSync(HEALTH_PROTO, { keepCase: true, enums: String, defaults: true })) as unknown as {
  grpc: {
    health: { v1: { Health: new (address: string, creds: grpc.ChannelCredentials, options?: grpc.ChannelOptions) => PlainHealthClient } };
  };
};
// the hosts below are "proof" (mTLS); the test's callers are "gateway"
let tls: TestTls;
let proofId: TlsIdentity;
let gatewayId: TlsIdentity;
let gatewayCreds: grpc.ChannelCredentials;
beforeAll(async () => {
  tls = await testTls();
  [proofId, gatewayId] = await Promise.all([tls.identity("proof"), tls.identity("gateway")]);
  gatewayCreds = grpcCredentials(tls.ca().cert, {
    cert: readFileSync(path.join(tls.dir, "gateway.crt"), "utf8"),
    key: readFileSync(path.join(tls.dir, "gateway.key"), "utf8"),
  });
});
const plainClients: PlainHealthClient[] = [];
function plainClient(port: number): PlainHealthClient {
  const c = new healthPkg.grpc.health.v1.Health(`127.0.0.1:${port}`, gatewayCreds, targetName("proof"));
  plainClients.push(c);
  return c;
}
const plainCheck = (c: PlainHealthClient, service = "") =>
  new Promise<HealthReply>((resolve, reject) => c.Check({ service }, (err, res) => (err ? reject(err) : resolve(res))));

afterAll(() => {
  for (const c of plainClients) c.close();
  tls.cleanup();
});

// ---- hosts

const silent = createLogger({ level: "silent" });
const hosts: ServiceHost[] = [];
async function host(opts: Partial<ServiceHostOptions> = {}): Promise<ServiceHost> {
  const h = await startServiceHost({
    name: NAME,
    host: "127.0.0.1",
    port: 0,
    logger: silent,
    routes: () => undefined,
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
    ...opts,
  });
  hosts.push(h);
  return h;
}
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});

describe("service host: grpc.health.v1", () => {
  it("answers SERVING to a plain gRPC client (grpc-js + health.proto), for '' and for its own name", async () => {
    const h = await host();
    expect(h.port).toBeGreaterThan(0);
    expect(h.url).toBe(`https://127.0.0.1:${h.port}`);
    const c = plainClient(h.port);
    expect(await plainCheck(c)).toEqual({ status: "SERVING" });
    expect(await plainCheck(c, NAME)).toEqual({ status: "SERVING" });
  });

  it("answers SERVING over Connect (rpcClient and checkHealth)", async () => {
    const h = await host();
    const r = await rpcClient(Health, h.url, gatewayId, 10_000, "proof").check({ service: "" });
    expect(r.status).toBe(Status.SERVING);
    expect(await checkHealth(h.url, gatewayId, "proof")).toBe(true);
  });

  it("answers NOT_SERVING while ready() says no, and when ready() throws", async () => {
    let state: "ok" | "no" | "throw" = "no";
    const h = await host({
      ready: async () => {
        if (state === "throw") throw new Error("database down");
        return state === "ok";
      },
    });
    const c = plainClient(h.port);
    expect(await plainCheck(c)).toEqual({ status: "NOT_SERVING" });
    expect(await checkHealth(h.url, gatewayId, "proof")).toBe(false);
    state = "throw";
    expect(await plainCheck(c)).toEqual({ status: "NOT_SERVING" });
    state = "ok";
    expect(await plainCheck(c)).toEqual({ status: "SERVING" });
  });

  it("Watch streams the current status and then NOT_SERVING when shutdown starts", async () => {
    const h = await host({ shutdownTimeoutMs: 500 });
    const stream = plainClient(h.port).Watch({ service: "" });
    const seen: string[] = [];
    const ended = new Promise<void>((resolve) => {
      stream.on("data", (m: HealthReply) => seen.push(m.status));
      stream.on("error", () => resolve());
      stream.on("end", () => resolve());
    });
    while (seen.length === 0) await sleep(10);
    expect(seen).toEqual(["SERVING"]);
    const started = Date.now();
    await h.close();
    await ended;
    expect(seen).toEqual(["SERVING", "NOT_SERVING"]);
    // an open watch does not hold shutdown past its timeout
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it("Check of an unknown service fails with NOT_FOUND, as grpc.health.v1 specifies", async () => {
    const h = await host();
    const err = await plainCheck(plainClient(h.port), "no.such.Service").then(
      () => undefined,
      (e: grpc.ServiceError) => e,
    );
    expect(err?.code).toBe(grpc.status.NOT_FOUND);
  });
});

describe("service host: errors over the wire", () => {
  it("a domain error reaches the caller with its spec code, message and extras", async () => {
    const h = await host({
      routes: (router) =>
        router.service(ProofService, {
          async getJwks() {
            throw new AppError("invalid_code", "the code is not correct", { extra: { attempts_remaining: 2 } });
          },
        }),
    });
    const err = await rpcClient(ProofService, h.url, gatewayId)
      .getJwks({})
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    const app = fromConnectError(err);
    expect([app.code, app.message, app.extra]).toEqual(["invalid_code", "the code is not correct", { attempts_remaining: 2 }]);
  });

  it("an unexpected failure reaches the caller as internal_error without its text, and is logged once", async () => {
    const out = lineCollector();
    const h = await host({
      logger: createLogger({ level: "info", destination: out }),
      routes: (router) =>
        router.service(ProofService, {
          async getJwks() {
            throw new Error("relation proof.signing_keys does not exist (password=hunter2)");
          },
        }),
    });
    const err = await rpcClient(ProofService, h.url, gatewayId)
      .getJwks({})
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    const app = fromConnectError(err);
    expect([app.code, app.message]).toEqual(["internal_error", "internal error"]);
    expect(JSON.stringify(err)).not.toContain("hunter2");
    expect(String((err as Error).message)).not.toContain("hunter2");
    const failures = out.records().filter((r) => r.msg === "rpc failed");
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ level: "error", method: "GetJwks" });
  });
  it("a domain error whose details hold a character above U+00FF keeps its code over the wire", async () => {
    const h = await host({
      routes: (router) =>
        router.service(ProofService, {
          async getJwks() {
            throw new AppError("validation_error", "invalid body", {
              details: [{ field: "name", message: "must be ≤ 255 characters", code: "too_big" }],
            });
          },
        }),
    });
    const err = await rpcClient(ProofService, h.url, gatewayId)
      .getJwks({})
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(fromConnectError(err).code).toBe("validation_error");
  });
});

describe("service host: graceful shutdown", () => {
  it("lets calls in flight finish (SERVING), then refuses new connections", async () => {
    let slow = false;
    let entered = 0;
    const h = await host({
      shutdownTimeoutMs: 5_000,
      ready: async () => {
        if (slow) {
          entered++;
          await sleep(300);
        }
        return true;
      },
    });
    const plain = plainClient(h.port);
    const connect = rpcClient(Health, h.url, gatewayId, 10_000, "proof");
    // warm both connections so the slow calls below are on open sessions
    expect(await plainCheck(plain)).toEqual({ status: "SERVING" });
    expect((await connect.check({ service: "" })).status).toBe(Status.SERVING);

    slow = true;
    const answered: number[] = [];
    const inFlight = [
      plainCheck(plain).then((r) => (answered.push(Date.now()), r.status)),
      connect.check({ service: "" }).then((r) => (answered.push(Date.now()), Status[r.status])),
    ];
    while (entered < 2) await sleep(5);

    await h.close();
    const closedAt = Date.now();
    expect(await Promise.all(inFlight)).toEqual(["SERVING", "SERVING"]);
    expect(Math.max(...answered)).toBeLessThanOrEqual(closedAt);

    // a new connection is refused
    const late = await plainCheck(plainClient(h.port)).then(
      () => undefined,
      (e: grpc.ServiceError) => e,
    );
    expect(late?.code).toBe(grpc.status.UNAVAILABLE);
    expect(await checkHealth(h.url, gatewayId, "proof", 500)).toBe(false);
  });

  it("close() is idempotent and ends by the timeout when a call never finishes", async () => {
    const h = await host({
      shutdownTimeoutMs: 300,
      routes: (router) =>
        router.service(ProofService, {
          async getJwks(_req, ctx) {
            await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
            return { keys: [] };
          },
        }),
    });
    const hung = rpcClient(ProofService, h.url, gatewayId, 10_000)
      .getJwks({})
      .catch((e: unknown) => e);
    await sleep(100);
    const started = Date.now();
    const [a, b] = [h.close(), h.close()];
    expect(a).toBe(b);
    await a;
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(Date.now() - started).toBeLessThan(3_000);
    // the hung call is cut, not left waiting for its own deadline
    const outcome = await hung;
    expect(outcome).toBeInstanceOf(ConnectError);
    expect([Code.Canceled, Code.Unavailable]).toContain((outcome as ConnectError).code);
  });
});
