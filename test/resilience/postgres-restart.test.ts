// A Postgres restart under load, as a tenant and an operator see it: no process ends (an
// unhandled 'error' would end this one, which hosts every service), requests during the
// outage answer 503 service_unavailable with Retry-After, everything works again afterwards,
// and every verification answered 201 exists exactly once.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { havePostgresBinaries, privatePostgres, type PrivatePostgres } from "../support/private-servers.ts";
import { api, startStack, type Stack } from "../support/stack.ts";

let pg: PrivatePostgres | undefined;
let stack: Stack | undefined;

beforeAll(async () => {
  if (!havePostgresBinaries) return;
  pg = await privatePostgres();
  // a rate limit the load never reaches: the only refusals this test accepts are the outage's 503s
  stack = await startStack({
    DATABASE_URL: pg.url,
    EVENT_POLL_INTERVAL_MS: "100",
    RETRY_BACKOFF_MAX_MS: "300",
    API_KEY_CACHE_TTL_MS: "0",
    RATE_LIMIT_PER_MINUTE: "100000",
  });
});
afterAll(async () => {
  await stack?.close();
  pg?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!havePostgresBinaries)("a Postgres restart under load (skipped: no postgres binaries)", () => {
  it("answers 503 with Retry-After during the outage, never crashes, and loses or doubles nothing", async () => {
    const t = await stack!.tenant("Restart");
    const c = api(stack!.url, t.testKey);
    const statuses = new Map<number, number>();
    const created: string[] = [];
    let unavailable: { retryAfter: string | null; code: string } | undefined;
    let n = 0;
    let stop = false;
    // a careful client: one Idempotency-Key per verification, retried after a 503 (or while
    // its first try is still "in progress") until it gets its answer
    const worker = async () => {
      while (!stop) {
        const i = n++;
        const body = { type: "phone", channel: "sms", identifier: `+370691${String(10000 + i).padStart(5, "0")}` };
        for (;;) {
          const r = await c.post("/api/v1/verifications", body, { "idempotency-key": `k-${i}` });
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
          if (r.status === 201) {
            created.push(r.body.id);
            break;
          }
          if (r.status === 503) unavailable ??= { retryAfter: r.headers.get("retry-after"), code: r.body?.error?.code };
          if (r.status !== 503 && !(r.status === 409 && r.body?.error?.code === "invalid_state")) throw new Error(`unexpected ${r.status}`);
          await sleep(100);
        }
      }
    };
    const load = Promise.all([worker(), worker(), worker()]);
    await sleep(500);
    pg!.stop();
    await sleep(1_500);
    pg!.start();
    // everything answers again within a few seconds of the restart
    const deadline = Date.now() + 10_000;
    while ((await c.get("/api/v1/verifications?limit=1")).status !== 200 && Date.now() < deadline) await sleep(100);
    const before = created.length;
    while (created.length < before + 10 && Date.now() < deadline) await sleep(50);
    expect(created.length).toBeGreaterThanOrEqual(before + 10);
    stop = true;
    await load;

    // during the outage: 503 service_unavailable with Retry-After (or, for a retry racing its
    // own first try, 409 "still in progress"); never a 500
    expect([...statuses.keys()].filter((s) => s !== 409).sort()).toEqual([201, 503]);
    expect(unavailable).toEqual({ retryAfter: expect.stringMatching(/^\d+$/), code: "service_unavailable" });
    expect(created.length).toBeGreaterThan(before);

    // every 201 is there exactly once, and the work after it completes (a proof is signed for each)
    const listed: string[] = [];
    for (let page = 1; ; page++) {
      const r = await c.get(`/api/v1/verifications?limit=100&page=${page}`);
      expect(r.status).toBe(200);
      listed.push(...r.body.data.map((v: { id: string }) => v.id));
      if (!r.body.pagination.hasMore) break;
    }
    expect(listed.sort()).toEqual([...created].sort());
    for (const id of created.slice(-5)) {
      const done = await c.post(`/api/v1/verifications/${id}/test-verify`);
      expect(done.status).toBe(200);
      expect(done.body.status).toBe("verified");
    }
    const health = await api(stack!.url).get("/health");
    expect(health.body.services.database).toBe("up");
  });
});
