// Challenge expiry with a clock the test moves by hand: a read never shows a stale pending, the
// sweeper moves unread verifications to expired on its own, and a late answer is refused.
import { beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "@icv/platform";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";
import { expectError, waitFor } from "../support/expect-error.ts";

const PHONE_TTL_MS = 10 * 60_000;
const clock = new ManualClock(Date.now());
const stack = useStack({ SWEEP_INTERVAL_MS: "100" }, clock);
const t = useTenant(stack, "Expiry");
let c: ReturnType<typeof api>;

beforeAll(() => {
  c = api(stack.url, t.testKey);
});

async function create(identifier: string) {
  const r = await c.post("/api/v1/verifications", { type: "phone", channel: "sms", identifier });
  expect(r.status).toBe(201);
  expect(Date.parse(r.body.challenge.expires_at)).toBe(clock.now().getTime() + PHONE_TTL_MS);
  return r.body;
}

const listIds = async (query: string) => {
  const r = await c.get(`/api/v1/verifications?limit=100&${query}`);
  expect(r.status).toBe(200);
  return r.body.data.map((v: { id: string }) => v.id) as string[];
};

describe("challenge expiry", () => {
  it("keeps a verification pending until its challenge runs out, then GET shows expired", async () => {
    const v = await create("+37069100020");
    clock.advance(PHONE_TTL_MS - 1_000);
    const before = await c.get(`/api/v1/verifications/${v.id}`);
    expect(before.body.status).toBe("pending");
    expect(before.body.challenge.expires_at).toBe(v.challenge.expires_at);

    clock.advance(2_000);
    const after = await c.get(`/api/v1/verifications/${v.id}`);
    expect(after.status).toBe(200);
    expect(after.body.status).toBe("expired");
    expect(after.body.challenge).toBeUndefined();
    expect(after.body.proof).toBeUndefined();
  });

  it("never lists a stale pending: right after the clock passes the expiry, status=pending leaves it out", async () => {
    const v = await create("+37069100021");
    expect(await listIds("status=pending")).toContain(v.id);
    clock.advance(PHONE_TTL_MS + 1_000);
    expect(await listIds("status=pending")).not.toContain(v.id);
    const all = await c.get("/api/v1/verifications?limit=100");
    const item = all.body.data.find((x: { id: string }) => x.id === v.id);
    expect(item.status).toBe("expired");
  });

  it("the sweeper moves a verification nobody reads to expired within a second", async () => {
    const unread = await create("+37069100022");
    const verified = await create("+37069100023");
    expect((await c.post(`/api/v1/verifications/${verified.id}/test-verify`)).status).toBe(200);
    clock.advance(PHONE_TTL_MS + 1_000);
    const started = Date.now();
    const seen = await waitFor(async () => (await listIds("status=expired")).includes(unread.id), 1_000);
    expect(seen, "swept to expired within 1 s").toBe(true);
    expect(Date.now() - started).toBeLessThan(1_500);
    // a verification that was already verified does not expire
    expect((await c.get(`/api/v1/verifications/${verified.id}`)).body.status).toBe("verified");
    expect(await listIds("status=expired")).not.toContain(verified.id);
  });

  it("refuses a submit and a test-verify after expiry with 400 challenge_expired", async () => {
    const v = await create("+37069100024");
    clock.advance(PHONE_TTL_MS + 1_000);
    expectError(await c.post(`/api/v1/verifications/${v.id}/submit`, { challenge_code: v.challenge.code }), 400, "challenge_expired");
    expectError(await c.post(`/api/v1/verifications/${v.id}/test-verify`), 400, "challenge_expired");
    const read = await c.get(`/api/v1/verifications/${v.id}`);
    expect(read.body).toMatchObject({ status: "expired", attempts: 0 });
  });

  it("treats the exact expires_at instant as expired", async () => {
    const v = await create("+37069100025");
    clock.advance(PHONE_TTL_MS);
    expectError(await c.post(`/api/v1/verifications/${v.id}/submit`, { challenge_code: v.challenge.code }), 400, "challenge_expired");
  });
});
