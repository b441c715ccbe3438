import { startStack, api } from "../../test/support/stack.ts";
import { rpcClient, Environment } from "@icv/platform";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Health } from "@icv/contracts/gen/grpc/health/v1/health_pb.ts";
import { PGlite } from "@electric-sql/pglite";
import { VerificationService } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
const s = await startStack({ RATE_LIMIT_PER_MINUTE: "1000000000" });
const t = await s.tenant("x");
const c = api(s.url, t.testKey);
const created = await c.post("/api/v1/verifications", { type: "phone", channel: "telegram", identifier: "+37069199199" });
const id = created.body.id;
await c.post(`/api/v1/verifications/${id}/test-verify`);
const scope = { tenantId: t.tenantId, environment: 2, requestId: "r" };
const variants: [string, any][] = [
  ["rpcClient (as gateway)", rpcClient(VerificationService, s.services.verification.url)],
  ["grpc, acceptCompression []", createClient(VerificationService, createGrpcTransport({ baseUrl: s.services.verification.url, acceptCompression: [] }))],
  ["grpc, no timeout, acceptCompression []", createClient(VerificationService, createGrpcTransport({ baseUrl: s.services.verification.url, acceptCompression: [], defaultTimeoutMs: undefined }))],
];
async function measure(label: string, n: number, fn: () => Promise<unknown>) {
  for (let i = 0; i < 200; i++) await fn();
  const c0 = process.cpuUsage(); const t0 = performance.now();
  for (let i = 0; i < n; i++) await fn();
  const cpu = process.cpuUsage(c0);
  console.log(`${label}: ${((performance.now() - t0) / n).toFixed(3)} ms wall, ${((cpu.user + cpu.system) / 1000 / n).toFixed(3)} ms CPU`);
}
const N = Number(process.env.N ?? 1000);
const health = rpcClient(Health, s.services.proof.url);
const healthNc = createClient(Health, createGrpcTransport({ baseUrl: s.services.proof.url, acceptCompression: [] }));
const lite = await PGlite.create(`${s.dataDir}/scratch`);
await lite.exec(`CREATE TABLE v (id text primary key, tenant_id text, environment text, a text, b text, c timestamptz, d jsonb, e int)`);
for (let i = 0; i < 100; i++) await lite.query(`INSERT INTO v VALUES ($1, 't', 'test', $2, $3, now(), '{"a":1}', 5)`, [`id${i}`, "x".repeat(100), "y".repeat(800)]);
for (let round = 0; round < 2; round++) {
  for (const [label, cl] of variants) await measure(`getVerification via ${label}`, N, () => cl.getVerification({ scope, id }));
  await measure("grpc Health.check via rpcClient (no DB)", N, () => health.check({ service: "" }));
  await measure("grpc Health.check, acceptCompression [] (no DB)", N, () => healthNc.check({ service: "" }));
  await measure("PGlite SELECT * by PK (scratch db, same process)", N, () => lite.query("SELECT * FROM v WHERE id = $1 AND tenant_id = $2 AND environment = $3", ["id5", "t", "test"]));
  await measure("PGlite SELECT 1", N, () => lite.query("SELECT 1"));
  await measure("REST GET (fetch → gateway → rpc)", N, () => c.get(`/api/v1/verifications/${id}`));
  await measure("REST GET /health/none 404 (fetch → gateway, no rpc)", N, () => c.get(`/api/v1/nothing-here`));
}
await s.close();
