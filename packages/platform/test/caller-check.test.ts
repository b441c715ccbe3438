// The caller check's log of refusals: one line per caller and RPC per minute (each refusal still
// counted), the next line saying how many were refused meanwhile. In memory, with a fake clock.
import { Code, type ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { DomainService } from "@icv/contracts/gen/icv/domain/v1/domain_service_pb.ts";
import { allow, callerCheck, LOCAL_CALLER_HEADER } from "../src/callers.ts";
import { createLogger } from "../src/logger.ts";
import { lineCollector } from "./support/log-lines.ts";

describe("refusals in the log", () => {
  it("are logged once per caller and RPC per minute, and each is counted", async () => {
    let now = 0;
    let denied = 0;
    const logs = lineCollector();
    const check = callerCheck({
      service: "icv.domain.v1.DomainService",
      lists: [allow(DomainService, { checkDns: ["verification"], checkHttp: ["verification"], checkWithProvider: [], detectProvider: [] })],
      identify: (req) => [req.header.get(LOCAL_CALLER_HEADER) ?? ""].filter(Boolean),
      logger: createLogger({ level: "info", destination: logs }),
      onDenied: () => void denied++,
      now: () => now,
    });
    const transport = createRouterTransport((r) => r.service(DomainService, {}), { router: { interceptors: [check] } });
    const client = createClient(DomainService, transport);
    const as = (caller: string) => ({ headers: { [LOCAL_CALLER_HEADER]: caller } });
    const refused = async (call: Promise<unknown>) =>
      expect(
        (await call.then(
          () => undefined,
          (e) => e,
        )) as ConnectError,
      ).toMatchObject({ code: Code.PermissionDenied });

    for (let i = 0; i < 3; i++) await refused(client.checkDns({}, as("session")));
    await refused(client.checkHttp({}, as("session")));
    now += 59_000;
    await refused(client.checkDns({}, as("session")));
    const lines = () => logs.records().filter((r) => r.msg === "rpc refused: caller not on the allow-list");
    expect(lines().map((r) => r.method)).toEqual(["icv.domain.v1.DomainService/CheckDns", "icv.domain.v1.DomainService/CheckHttp"]);
    now += 1_000;
    await refused(client.checkDns({}, as("session")));
    expect(lines()).toHaveLength(3);
    expect(lines()[2]).toMatchObject({ caller: "session", method: "icv.domain.v1.DomainService/CheckDns", refused_since_last_line: 3 });
    expect(denied).toBe(6);
  });
});
