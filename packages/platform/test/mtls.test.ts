// Internal calls over real sockets with a plain gRPC client (grpc-js), as an attacker inside the
// cluster network would make them: mutual TLS, the callers' allow-lists of the real services,
// expired and foreign certificates, rotation without restart, and the in-process path.
import { X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type DescMessage, type DescMethodUnary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Health } from "@icv/contracts/gen/grpc/health/v1/health_pb.ts";
import { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import { WebhookService } from "@icv/contracts/gen/icv/webhook/v1/webhook_service_pb.ts";
import { proofCallers } from "../../../services/proof/src/callers.ts";
import { webhookCallers } from "../../../services/webhook/src/callers.ts";
import { createLogger } from "../src/logger.ts";
import { rpcClient } from "../src/rpc.ts";
import { startServiceHost, type ServiceHost } from "../src/service-host.ts";
import { createCa, ensureTlsDir, issueCertificate, serviceIdentity, TlsIdentity, type CertKey } from "../src/tls.ts";
import { parseConfig } from "../src/config.ts";
import { lineCollector } from "./support/log-lines.ts";
import { grpcCredentials, targetName, testTls, type TestTls } from "./support/tls.ts";

const silent = createLogger({ level: "silent" });
let tls: TestTls;
let proof: ServiceHost;
let webhook: ServiceHost;
const log = lineCollector();
/** How many times each stub RPC's handler ran (a refused call never reaches it). */
const ran: Record<string, number> = {};
const count = (name: string) => async () => ((ran[name] = (ran[name] ?? 0) + 1), {});

const certOf = (name: string): CertKey => ({
  cert: readFileSync(path.join(tls.dir, `${name}.crt`), "utf8"),
  key: readFileSync(path.join(tls.dir, `${name}.key`), "utf8"),
});

beforeAll(async () => {
  tls = await testTls();
  const logger = createLogger({ level: "info", destination: log });
  proof = await startServiceHost({
    name: "icv.proof.v1.ProofService",
    host: "127.0.0.1",
    port: 0,
    logger,
    identity: await tls.identity("proof"),
    callers: proofCallers,
    routes: (router) => router.service(ProofService, { issueProof: count("IssueProof"), getJwks: count("GetJwks") }),
  });
  webhook = await startServiceHost({
    name: "icv.webhook.v1.WebhookService",
    host: "127.0.0.1",
    port: 0,
    logger,
    identity: await tls.identity("webhook"),
    callers: webhookCallers,
    routes: (router) => router.service(WebhookService, { ensureTenantSecrets: count("EnsureTenantSecrets"), getTenantWebhooks: count("GetTenantWebhooks") }),
  });
});
afterAll(async () => {
  await Promise.all([proof?.close(), webhook?.close()]);
  for (const c of clients) c.close();
  tls.cleanup();
});

// ---- a plain grpc-js client that calls one unary method with protobuf-es messages

const clients: grpc.Client[] = [];
function call<I extends DescMessage, O extends DescMessage>(
  port: number,
  creds: grpc.ChannelCredentials,
  serverName: string,
  method: DescMethodUnary<I, O>,
  metadata = new grpc.Metadata(),
): Promise<{ code: grpc.status; details?: string }> {
  const client = new grpc.Client(`127.0.0.1:${port}`, creds, targetName(serverName));
  clients.push(client);
  const path = `/${method.parent.typeName}/${method.name}`;
  return new Promise((resolve) =>
    client.makeUnaryRequest(
      path,
      (m: unknown) => Buffer.from(toBinary(method.input, m as never)),
      (b: Buffer) => fromBinary(method.output, b),
      create(method.input) as unknown,
      metadata,
      { deadline: Date.now() + 5_000 },
      (err) => resolve(err ? { code: err.code, details: err.details } : { code: grpc.status.OK }),
    ),
  );
}
const caCert = () => tls.ca().cert;
const as = (name: string) => grpcCredentials(caCert(), certOf(name));

describe("mutual TLS: who gets a connection", () => {
  it("a client without a certificate fails the handshake and reaches no handler", async () => {
    const before = ran.IssueProof ?? 0;
    const r = await call(proof.port, grpcCredentials(caCert()), "proof", ProofService.method.issueProof);
    expect(r.code).toBe(grpc.status.UNAVAILABLE);
    expect(ran.IssueProof ?? 0).toBe(before);
  });

  it("a client whose certificate comes from another CA (even naming verification) fails the handshake", async () => {
    const other = await createCa("someone else's CA");
    const forged = await issueCertificate(other, "verification");
    const r = await call(proof.port, grpcCredentials(caCert(), forged), "proof", ProofService.method.issueProof);
    expect(r.code).toBe(grpc.status.UNAVAILABLE);
  });

  it("an expired certificate from the right CA is refused", async () => {
    const expired = await issueCertificate(tls.ca(), "verification", {
      notBefore: new Date(Date.now() - 3 * 86400_000),
      notAfter: new Date(Date.now() - 86400_000),
    });
    const r = await call(proof.port, grpcCredentials(caCert(), expired), "proof", ProofService.method.issueProof);
    expect(r.code).toBe(grpc.status.UNAVAILABLE);
  });

  it("the client refuses a server whose certificate names another service", async () => {
    // the webhook service's port reached by someone who means to talk to proof
    const r = await call(webhook.port, as("verification"), "proof", ProofService.method.issueProof);
    expect(r.code).toBe(grpc.status.UNAVAILABLE);
  });
});

describe("mutual TLS: the allow-lists", () => {
  it("an unlisted service's valid certificate gets PERMISSION_DENIED on IssueProof, logged with its name and counted", async () => {
    const before = proof.deniedCalls;
    const r = await call(proof.port, as("session"), "proof", ProofService.method.issueProof);
    expect(r.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(ran.IssueProof ?? 0).toBe(0);
    expect(proof.deniedCalls).toBe(before + 1);
    const refused = log.records().filter((l) => l.msg === "rpc refused: caller not on the allow-list");
    expect(refused.at(-1)).toMatchObject({
      level: "warn",
      caller: "session",
      rpc_service: "icv.proof.v1.ProofService",
      method: "icv.proof.v1.ProofService/IssueProof",
    });
  });

  it("the gateway may read the JWKS but may not issue a proof", async () => {
    expect((await call(proof.port, as("gateway"), "proof", ProofService.method.getJwks)).code).toBe(grpc.status.OK);
    expect((await call(proof.port, as("gateway"), "proof", ProofService.method.issueProof)).code).toBe(grpc.status.PERMISSION_DENIED);
  });

  it("a header claiming to be verification does not help a network caller", async () => {
    const md = new grpc.Metadata();
    md.set("icv-local-caller", "verification");
    const r = await call(proof.port, as("session"), "proof", ProofService.method.issueProof, md);
    expect(r.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(ran.IssueProof ?? 0).toBe(0);
  });

  it("unlisted services get PERMISSION_DENIED on the RPCs that return webhook secrets", async () => {
    for (const name of ["session", "verification", "proof"]) {
      for (const m of [WebhookService.method.ensureTenantSecrets, WebhookService.method.getTenantWebhooks]) {
        expect((await call(webhook.port, as(name), "webhook", m as DescMethodUnary)).code, `${name} ${m.name}`).toBe(grpc.status.PERMISSION_DENIED);
      }
    }
    expect(ran.EnsureTenantSecrets ?? 0).toBe(0);
    expect(ran.GetTenantWebhooks ?? 0).toBe(0);
  });

  it("the listed callers succeed: verification issues a proof, the gateway reads webhook secrets", async () => {
    expect((await call(proof.port, as("verification"), "proof", ProofService.method.issueProof)).code).toBe(grpc.status.OK);
    expect(ran.IssueProof).toBe(1);
    expect((await call(webhook.port, as("gateway"), "webhook", WebhookService.method.ensureTenantSecrets)).code).toBe(grpc.status.OK);
    expect((await call(webhook.port, as("gateway"), "webhook", WebhookService.method.getTenantWebhooks)).code).toBe(grpc.status.OK);
  });

  it("the in-process path carries the caller's name through the same allow-list", async () => {
    // rpcClient reaches a service hosted in this process in memory, without a socket
    const session = await tls.identity("session");
    const verification = await tls.identity("verification");
    const before = proof.deniedCalls;
    const refused = await rpcClient(ProofService, proof.url, session)
      .issueProof({})
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(refused).toBeInstanceOf(ConnectError);
    expect((refused as ConnectError).code).toBe(Code.PermissionDenied);
    expect(proof.deniedCalls).toBe(before + 1);
    const issuedBefore = ran.IssueProof ?? 0;
    await rpcClient(ProofService, proof.url, verification).issueProof({});
    expect(ran.IssueProof).toBe(issuedBefore + 1);
  });
});

describe("the plain health port (for probes without a certificate)", () => {
  it("answers grpc.health.v1 without a client certificate and serves nothing else", async () => {
    const host = await startServiceHost({
      name: "icv.proof.v1.ProofService",
      host: "127.0.0.1",
      port: 0,
      healthPort: 0,
      logger: silent,
      identity: await tls.identity("proof"),
      callers: proofCallers,
      routes: (router) => router.service(ProofService, { issueProof: count("IssueProof") }),
    });
    try {
      const plain = grpc.credentials.createInsecure();
      expect((await call(host.healthPort!, plain, "proof", Health.method.check)).code).toBe(grpc.status.OK);
      const before = ran.IssueProof ?? 0;
      expect((await call(host.healthPort!, plain, "proof", ProofService.method.issueProof)).code).toBe(grpc.status.UNIMPLEMENTED);
      // and the main port still wants a certificate
      expect((await call(host.port, plain, "proof", Health.method.check)).code).toBe(grpc.status.UNAVAILABLE);
      expect(ran.IssueProof ?? 0).toBe(before);
    } finally {
      await host.close();
    }
  });
});

describe("mutual TLS: rpcClient over the network (as a service in another process calls)", () => {
  // "localhost" is not the URL the host registered in process, so these calls take the socket
  const networkUrl = () => `https://localhost:${proof.port}`;

  it("presents the caller's certificate: verification may issue, session may not", async () => {
    const issuedBefore = ran.IssueProof ?? 0;
    await rpcClient(ProofService, networkUrl(), await tls.identity("verification")).issueProof({});
    expect(ran.IssueProof).toBe(issuedBefore + 1);
    const refused = await rpcClient(ProofService, networkUrl(), await tls.identity("session"))
      .issueProof({})
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect((refused as ConnectError).code).toBe(Code.PermissionDenied);
  });

  it("refuses a server whose certificate does not name the service it asked for", async () => {
    const before = ran.GetTenantWebhooks ?? 0;
    const wrong = await rpcClient(WebhookService, `https://localhost:${proof.port}`, await tls.identity("gateway"))
      .getTenantWebhooks({})
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(wrong).toBeInstanceOf(ConnectError);
    expect((wrong as ConnectError).message).toContain("not in the cert's altnames: DNS:proof");
    expect(ran.GetTenantWebhooks ?? 0).toBe(before);
  });
});

describe("mutual TLS: rotation without restart", () => {
  it("a server whose CA and certificate files are replaced takes them for new connections", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "icv-rotate-"));
    const files = { ca: path.join(dir, "ca.crt"), cert: path.join(dir, "tls.crt"), key: path.join(dir, "tls.key") };
    const write = (ca: CertKey, leaf: CertKey) => {
      writeFileSync(files.key, leaf.key);
      writeFileSync(files.cert, leaf.cert);
      writeFileSync(files.ca, ca.cert);
    };
    const [oldCa, newCa] = await Promise.all([createCa("old CA"), createCa("new CA")]);
    write(oldCa, await issueCertificate(oldCa, "proof"));
    const identity = await TlsIdentity.load("proof", files, silent, 100);
    const host = await startServiceHost({
      name: "icv.proof.v1.ProofService",
      host: "127.0.0.1",
      port: 0,
      logger: silent,
      identity,
      callers: proofCallers,
      routes: (router) => router.service(ProofService, { getJwks: async () => ({}) }),
    });
    try {
      const oldGateway = grpcCredentials(oldCa.cert, await issueCertificate(oldCa, "gateway"));
      const newGateway = grpcCredentials(newCa.cert, await issueCertificate(newCa, "gateway"));
      expect((await call(host.port, oldGateway, "proof", ProofService.method.getJwks)).code).toBe(grpc.status.OK);
      expect((await call(host.port, newGateway, "proof", ProofService.method.getJwks)).code).toBe(grpc.status.UNAVAILABLE);

      write(newCa, await issueCertificate(newCa, "proof"));
      let code = grpc.status.UNAVAILABLE;
      for (let i = 0; i < 50 && code !== grpc.status.OK; i++) {
        await sleep(100);
        code = (await call(host.port, newGateway, "proof", ProofService.method.getJwks)).code;
      }
      expect(code).toBe(grpc.status.OK);
      // the old CA's certificates no longer get in (connections made before were sent GOAWAY)
      expect((await call(host.port, oldGateway, "proof", ProofService.method.getJwks)).code).toBe(grpc.status.UNAVAILABLE);
    } finally {
      await host.close();
      identity.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a client whose certificate files are replaced presents the new certificate on its next connection", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "icv-rotate-"));
    const files = { ca: path.join(dir, "ca.crt"), cert: path.join(dir, "gateway.crt"), key: path.join(dir, "gateway.key") };
    const stale = await issueCertificate(await createCa("retired CA"), "gateway");
    writeFileSync(files.ca, caCert());
    writeFileSync(files.cert, stale.cert);
    writeFileSync(files.key, stale.key);
    const identity = await TlsIdentity.load("gateway", files, silent, 100);
    try {
      const client = rpcClient(ProofService, `https://localhost:${proof.port}`, identity);
      const refused = await client.getJwks({}).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(refused).toBeInstanceOf(ConnectError);
      const fresh = await issueCertificate(tls.ca(), "gateway");
      writeFileSync(files.key, fresh.key);
      writeFileSync(files.cert, fresh.cert);
      let ok = false;
      for (let i = 0; i < 50 && !ok; i++) {
        await sleep(100);
        ok = await client.getJwks({}).then(
          () => true,
          () => false,
        );
      }
      expect(ok).toBe(true);
    } finally {
      identity.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a broken replacement (key of another certificate) is refused and the current files stay in use", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "icv-rotate-"));
    const files = { ca: path.join(dir, "ca.crt"), cert: path.join(dir, "tls.crt"), key: path.join(dir, "tls.key") };
    const ca = await createCa();
    const first = await issueCertificate(ca, "proof");
    writeFileSync(files.ca, ca.cert);
    writeFileSync(files.cert, first.cert);
    writeFileSync(files.key, first.key);
    const identity = await TlsIdentity.load("proof", files, silent, 60_000);
    try {
      writeFileSync(files.key, (await issueCertificate(ca, "proof")).key);
      expect(await identity.reload()).toBe(false);
      expect(identity.options.cert).toBe(first.cert);
    } finally {
      identity.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("certificate files", () => {
  it("a service refuses to start with a certificate that names another service", async () => {
    const files = { ca: path.join(tls.dir, "ca.crt"), cert: path.join(tls.dir, "session.crt"), key: path.join(tls.dir, "session.key") };
    await expect(TlsIdentity.load("proof", files, silent)).rejects.toThrow("names session, not proof");
  });

  it("TLS_*_FILE are used as they are; without them the data dir's generated files are", async () => {
    const cfg = parseConfig({
      DATA_DIR: tls.dir,
      TLS_DIR: tls.dir,
      TLS_CA_FILE: path.join(tls.dir, "ca.crt"),
      TLS_CERT_FILE: path.join(tls.dir, "gateway.crt"),
      TLS_KEY_FILE: path.join(tls.dir, "gateway.key"),
    });
    await expect(serviceIdentity(cfg, "proof", silent)).rejects.toThrow("names gateway, not proof");
    const id = await serviceIdentity(parseConfig({ TLS_DIR: tls.dir }), "proof", silent);
    expect(id.options.cert).toBe(readFileSync(path.join(tls.dir, "proof.crt"), "utf8"));
    id.close();
  });

  it("the embedded default issues a service certificate again when it is about to expire, with the same CA", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "icv-tlsdir-"));
    try {
      await ensureTlsDir(dir, silent);
      const ca = readFileSync(path.join(dir, "ca.crt"), "utf8");
      const soon = await issueCertificate({ cert: ca, key: readFileSync(path.join(dir, "ca.key"), "utf8") }, "proof", {
        notAfter: new Date(Date.now() + 86400_000),
      });
      writeFileSync(path.join(dir, "proof.crt"), soon.cert);
      writeFileSync(path.join(dir, "proof.key"), soon.key);
      // a later start
      await ensureTlsDir(dir, silent);
      const renewed = new X509Certificate(readFileSync(path.join(dir, "proof.crt")));
      expect(new Date(renewed.validTo).getTime()).toBeGreaterThan(Date.now() + 300 * 86400_000);
      expect(renewed.verify(new X509Certificate(ca).publicKey)).toBe(true);
      expect(readFileSync(path.join(dir, "ca.crt"), "utf8")).toBe(ca);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
