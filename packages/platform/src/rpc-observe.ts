import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { rpcDuration, rpcRequests, serviceLabel } from "./metrics.ts";
import { extractContext, injectContext, inSpan, SpanKind, tracingEnabled } from "./tracing.ts";

const codeName = (e: unknown): string => {
  const c = ConnectError.from(e).code;
  // permission_denied, not_found… (the gRPC names, lower case)
  return Code[c]?.replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase() ?? String(c);
};

/**
 * The serving side of every RPC (network and in memory): RED metrics by service, method and gRPC
 * code, and (tracing on) a server span continuing the caller's trace from its `traceparent`.
 */
export function serverObserver(rpcName: string): Interceptor {
  const service = serviceLabel(rpcName);
  return (next) => async (req) => {
    const method = `${req.service.name}/${req.method.name}`;
    const start = performance.now();
    let code = "ok";
    try {
      if (!tracingEnabled()) return await next(req);
      return await inSpan(
        `${service} ${method}`,
        SpanKind.SERVER,
        { "rpc.system": "connect_rpc", "rpc.service": req.service.typeName, "rpc.method": req.method.name },
        () => next(req),
        extractContext(req.header),
      );
    } catch (e) {
      code = codeName(e);
      throw e;
    } finally {
      const labels = { service, method, code };
      rpcRequests.inc(labels);
      rpcDuration.observe(labels, (performance.now() - start) / 1000);
    }
  };
}

/** The calling side (tracing on): a client span, its context sent as `traceparent` (headers in memory, gRPC metadata on the network). */
export const clientTracer: Interceptor = (next) => async (req) => {
  if (!tracingEnabled()) return next(req);
  return inSpan(
    `call ${req.service.name}/${req.method.name}`,
    SpanKind.CLIENT,
    { "rpc.system": "connect_rpc", "rpc.service": req.service.typeName, "rpc.method": req.method.name },
    () => {
      injectContext(req.header);
      return next(req);
    },
  );
};
