// The client's committed document is the one the gateway serves: GET /api/openapi.json of a
// gateway built in-process (its route table only) answers exactly src/gen/openapi.json, so the
// generated types describe the API as it is. (`npm run check:generated` checks the types too.)
import { readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect, it } from "vitest";
import { createLogger, parseConfig, type TlsIdentity } from "@icv/platform";
import { buildApp } from "../../../services/gateway/src/app.ts";
import { makeClients } from "../../../services/gateway/src/clients.ts";
import { MemoryRateLimiter } from "../../../services/gateway/src/rate-limit.ts";
import type { GatewayStore } from "../../../services/gateway/src/store.ts";

it("is what the gateway serves at /api/openapi.json", async () => {
  const config = parseConfig({ PUBLIC_BASE_URL: "https://icv.example.com" });
  const logger = createLogger({ level: "silent" });
  const { app } = buildApp({
    config,
    logger,
    store: {} as GatewayStore,
    clients: makeClients(config, {} as TlsIdentity, logger),
    limiter: new MemoryRateLimiter(),
  });
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/api/openapi.json`);
    const committed = JSON.parse(readFileSync(new URL("../src/gen/openapi.json", import.meta.url), "utf8"));
    expect(await res.json()).toEqual(committed);
    expect(Object.keys(committed.paths).length).toBeGreaterThan(50);
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
});
