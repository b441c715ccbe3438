import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { DescService } from "@bufbuild/protobuf";
import { Health, HealthCheckResponse_ServingStatus as Status } from "@icv/contracts/gen/grpc/health/v1/health_pb.ts";

/**
 * A gRPC (HTTP/2) client of one service; connections are pooled and kept alive by the transport.
 * Failures arrive as ConnectError carrying the callee's spec code (`fromConnectError` reads it).
 */
export function rpcClient<T extends DescService>(service: T, baseUrl: string, timeoutMs = 10_000): Client<T> {
  const transport = createGrpcTransport({
    baseUrl,
    defaultTimeoutMs: timeoutMs,
    pingIntervalMs: 30_000,
  });
  return createClient(service, transport);
}

/** Asks a service's grpc.health.v1 endpoint; false on any failure. */
export async function checkHealth(baseUrl: string, timeoutMs = 2_000): Promise<boolean> {
  try {
    const client = healthClients.get(baseUrl) ?? rpcClient(Health, baseUrl, timeoutMs);
    healthClients.set(baseUrl, client);
    const r = await client.check({ service: "" }, { timeoutMs });
    return r.status === Status.SERVING;
  } catch {
    return false;
  }
}
const healthClients = new Map<string, Client<typeof Health>>();
