// Every service started while the Kafka broker (KAFKA_BROKERS) is not reachable: the starts do
// not wait for it and nothing stops (it used to stop the verification service after ~9 s, when
// kafkajs gave up), /health answers 200 degraded with kafka: down, the API keeps working, and the
// events stay in the outboxes (their lag grows) for when the broker is back. The reconnect once
// it is back is tested with fakes of kafkajs' consumer and producer
// (packages/platform/test/kafka-reconnect.test.ts): no broker runs here.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../support/private-servers.ts";
import { api, startStack, type Stack, type TenantKeys } from "../support/stack.ts";

let stack: Stack;
let t: TenantKeys;

beforeAll(async () => {
  // a port nobody listens on: every connection to the "broker" is refused
  stack = await startStack({ KAFKA_BROKERS: `127.0.0.1:${await freePort()}`, RETRY_BACKOFF_MAX_MS: "500", EVENT_POLL_INTERVAL_MS: "100" });
  t = await stack.tenant("Kafka away");
}, 300_000); // each service's broadcast subscriptions wait up to 10 s for the broker before going on
afterAll(() => stack?.close());

/** The all-in-one's gauge of the oldest unpublished event of a schema, in seconds. */
async function outboxLag(schema: string): Promise<number | undefined> {
  const text = await (await fetch(`${stack.gateway.adminUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`icv_outbox_lag_seconds{schema="${schema}"}`));
  return line === undefined ? undefined : Number(line.split(" ").at(-1));
}

describe("Kafka not reachable", () => {
  it("every service starts and serves; /health says degraded, kafka down; events wait in the outboxes", { timeout: 90_000 }, async () => {
    const c = api(stack.url, t.testKey);
    const started = Date.now();
    // the first verification's events wait in the outbox from here on
    const first = await c.post("/api/v1/verifications", { type: "phone", channel: "sms", identifier: "+37069100100" });
    expect(first.status).toBe(201);
    expect((await c.post(`/api/v1/verifications/${first.body.id}/test-verify`)).body.status).toBe("verified");

    // under steady use for longer than kafkajs' own retries last (~9 s from the start, which was before this),
    // every request succeeds and /health keeps saying why it is degraded
    let n = 0;
    while (Date.now() - started < 12_000) {
      n++;
      const v = await c.post("/api/v1/verifications", {
        type: "phone",
        channel: "sms",
        identifier: `+370691${String(n).padStart(5, "0")}`,
      });
      expect(v.status).toBe(201);
      const done = await c.post(`/api/v1/verifications/${v.body.id}/test-verify`);
      expect(done.status).toBe(200);
      expect(done.body.status).toBe("verified");
      const h = await api(stack.url).get("/health");
      expect(h.status).toBe(200);
      expect(h.body.status).toBe("degraded");
      expect(h.body.services).toMatchObject({
        kafka: "down",
        database: "up",
        verification: "up",
        proof: "up",
        webhook: "up",
        session: "up",
        domain: "up",
      });
      // paced: the key's rate limit (100 a minute) is not what this test is about
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(n).toBeGreaterThan(0);

    // nothing was published: the first verification's events are still the oldest in its outbox
    const lag = await outboxLag("verification");
    expect(lag).toBeGreaterThanOrEqual(10);
    // and the services still answer (none stopped)
    expect((await c.get(`/api/v1/verifications/${first.body.id}`)).body.status).toBe("verified");
  });
});
