// Postgres outages under load, as a tenant and an operator see them, on a server of the test's
// own: a restart, and a server that hangs (every process of it stopped by SIGSTOP: connections
// stay open and nothing is answered, as a frozen VM or a black-holed network leaves them). No
// process ends (an unhandled 'error' would end this one, which hosts every service), requests
// during the outage answer 503 service_unavailable with Retry-After, everything works again
// afterwards, and every verification answered 201 exists exactly once (a statement that may have
// changed data is never abandoned, so none is done twice).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { carefulLoad, expectEachOnceAndWorking, expectServingAgain } from "../support/careful-load.ts";
import { havePostgresBinaries, privatePostgres, type PrivatePostgres } from "../support/private-servers.ts";
import { api, startStack, type Stack } from "../support/stack.ts";

let pg: PrivatePostgres | undefined;
let stack: Stack | undefined;

beforeAll(async () => {
  if (!havePostgresBinaries) return;
  pg = await privatePostgres();
  // a rate limit the load never reaches: the only refusals these tests accept are the outage's
  // 503s; no API key cache: every request reads the database
  stack = await startStack({
    DATABASE_URL: pg.url,
    DATABASE_QUERY_TIMEOUT_MS: "1000",
    EVENT_POLL_INTERVAL_MS: "100",
    RETRY_BACKOFF_MAX_MS: "300",
    API_KEY_CACHE_TTL_MS: "0",
    RATE_LIMIT_PER_MINUTE: "100000",
  });
});
afterAll(async () => {
  pg?.resume();
  await stack?.close();
  pg?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Answer = Awaited<ReturnType<ReturnType<typeof api>["get"]>>;

/** The answer and how long it took; no answer if none came within `limitMs`. */
async function within(limitMs: number, call: () => Promise<Answer>): Promise<{ answer?: Answer; ms: number }> {
  const began = Date.now();
  const answer = await Promise.race([call(), sleep(limitMs).then(() => undefined)]);
  return { answer, ms: Date.now() - began };
}

describe.skipIf(!havePostgresBinaries)("Postgres outages under load (skipped: no postgres binaries)", () => {
  it("a restart: answers 503 with Retry-After during the outage, never crashes, and loses or doubles nothing", async () => {
    const c = api(stack!.url, (await stack!.tenant("Restart")).testKey);
    const load = carefulLoad(c, "691");
    await sleep(500);
    pg!.stop();
    await sleep(1_500);
    pg!.start();
    await expectServingAgain(c, load, 10_000);
    await load.stop();

    // during the outage: 503 service_unavailable with Retry-After (or, for a retry racing its
    // own first try, 409 "still in progress"); never a 500
    expect([...load.statuses.keys()].filter((s) => s !== 409).sort()).toEqual([201, 503]);
    expect(load.unavailable).toEqual({ retryAfter: expect.stringMatching(/^\d+$/), code: "service_unavailable" });
    await expectEachOnceAndWorking(c, load.created);
    expect((await api(stack!.url).get("/health")).body.services.database).toBe("up");
  });

  it("a hang: answers 503 with Retry-After and /health down while it hangs, then serves again, losing and doubling nothing", async () => {
    const c = api(stack!.url, (await stack!.tenant("Hang")).testKey);
    const load = carefulLoad(c, "692");
    await sleep(500);
    expect(load.created.length).toBeGreaterThan(0);

    pg!.pause();
    let health: { answer?: Answer; ms: number };
    const reads: { answer?: Answer; ms: number }[] = [];
    try {
      // while it hangs: /health within its 2 s checks, and reads one after another, each given up
      // on (1 s for a statement sent, 5 s for a connection that cannot be made)
      [health] = await Promise.all([
        within(6_000, () => api(stack!.url).get("/health")),
        (async () => {
          for (let i = 0; i < 3; i++) reads.push(await within(10_000, () => c.get("/api/v1/verifications?limit=1")));
        })(),
      ]);
    } finally {
      pg!.resume();
    }
    expect(health.answer?.status).toBe(503);
    expect(health.answer?.body.services.database).toBe("down");
    expect(health.ms).toBeLessThan(4_000);
    for (const r of reads) {
      expect(r.answer?.status).toBe(503);
      expect(r.answer?.body.error.code).toBe("service_unavailable");
      expect(r.answer?.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(r.ms).toBeLessThan(8_000);
    }

    await expectServingAgain(c, load, 15_000);
    await load.stop();
    // the load's creates: 201, or 503 and retried (a create whose write was in flight when the
    // server froze waits for it instead, so the load may see no 503); never a 500
    expect([...load.statuses.keys()].filter((s) => s !== 409 && s !== 503)).toEqual([201]);
    await expectEachOnceAndWorking(c, load.created);
    expect((await api(stack!.url).get("/health")).body.services.database).toBe("up");
  });
});
