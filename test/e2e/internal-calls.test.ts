// The attack from inside the cluster network against the stack as `npm start` runs it: a plain
// gRPC client (grpc-js) calling the proof and webhook services' ports directly. Without a
// certificate it gets no connection; with another service's certificate from the data dir it
// gets PERMISSION_DENIED on minting proofs and reading webhook secrets.
import { readFileSync } from "node:fs";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type DescMessage, type DescMethodUnary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import { WebhookService } from "@icv/contracts/gen/icv/webhook/v1/webhook_service_pb.ts";
import { grpcCredentials, targetName } from "../../packages/platform/test/support/tls.ts";
import { startStack, type Stack } from "../support/stack.ts";

let stack: Stack;
let tenantId: string;
const clients: grpc.Client[] = [];
beforeAll(async () => {
  stack = await startStack();
  tenantId = (await stack.tenant()).tenantId;
});
afterAll(async () => {
  for (const c of clients) c.close();
  await stack?.close();
});

const file = (name: string) => readFileSync(path.join(stack.dataDir, "tls", name), "utf8");
const as = (name: string) => grpcCredentials(file("ca.crt"), { cert: file(`${name}.crt`), key: file(`${name}.key`) });
const portOf = (url: string) => Number(new URL(url).port);

function call<I extends DescMessage, O extends DescMessage>(
  url: string,
  creds: grpc.ChannelCredentials,
  serverName: string,
  method: DescMethodUnary<I, O>,
  input: unknown,
): Promise<{ code: grpc.status; body?: Record<string, unknown> }> {
  const client = new grpc.Client(`127.0.0.1:${portOf(url)}`, creds, targetName(serverName));
  clients.push(client);
  return new Promise((resolve) =>
    client.makeUnaryRequest(
      `/${method.parent.typeName}/${method.name}`,
      (m: unknown) => Buffer.from(toBinary(method.input, m as never)),
      (b: Buffer) => fromBinary(method.output, b),
      create(method.input, input as never) as unknown,
      new grpc.Metadata(),
      { deadline: Date.now() + 10_000 },
      (err, res) => resolve(err ? { code: err.code } : { code: grpc.status.OK, body: res as Record<string, unknown> }),
    ),
  );
}

const issue = () => ({
  scope: { tenantId, environment: Environment.LIVE },
  proofId: "prf_internal_calls_test",
  type: "phone",
  channel: "sms",
  identifier: "+15555550100",
  expiresInSeconds: 3600,
});

describe("internal calls from inside the network", () => {
  it("no client certificate: no connection to the proof service, no proof", async () => {
    const r = await call(stack.services.proof.url, grpcCredentials(file("ca.crt")), "proof", ProofService.method.issueProof, issue());
    expect(r.code).toBe(grpc.status.UNAVAILABLE);
  });

  it("the session service's certificate may not mint a proof or read a tenant's webhook secrets", async () => {
    expect((await call(stack.services.proof.url, as("session"), "proof", ProofService.method.issueProof, issue())).code).toBe(grpc.status.PERMISSION_DENIED);
    for (const m of [WebhookService.method.ensureTenantSecrets, WebhookService.method.getTenantWebhooks]) {
      const r = await call(stack.services.webhook.url, as("session"), "webhook", m as DescMethodUnary, { tenantId });
      expect(r.code, m.name).toBe(grpc.status.PERMISSION_DENIED);
      expect(r.body).toBeUndefined();
    }
  });

  it("the listed callers get through: the gateway reads the tenant's secrets", async () => {
    const r = await call(stack.services.webhook.url, as("gateway"), "webhook", WebhookService.method.getTenantWebhooks, { tenantId });
    expect(r.code).toBe(grpc.status.OK);
    expect((r.body as { live: { secret: string } }).live.secret).toMatch(/^whsec_/);
  });
});
