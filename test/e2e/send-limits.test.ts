// Send limits through the public API, with a real SMTP server and a clock the test moves by hand
// (docs/send-limits.md): 5 codes per address per 10 minutes across verifications, resends,
// domain admin mail and tenants; a tenant's hourly budget; the hosted page starts an asset at
// most 3 times, and its starts honour the per-address limit. Over a limit: 429 rate_limited with
// Retry-After, no mail, nothing stored.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "@icv/platform";
import { api, startStack, type Stack, type TenantKeys } from "../support/stack.ts";
import { startSmtp } from "../support/smtp.ts";
import { expectError, waitFor } from "../support/expect-error.ts";

const clock = new ManualClock(Date.now());
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let stack: Stack;
let a: TenantKeys;
let b: TenantKeys;

beforeAll(async () => {
  smtp = await startSmtp();
  stack = await startStack({ SMTP_URL: smtp.url, SMTP_FROM: "ICV <codes@icv.test>" }, clock);
  [a, b] = [await stack.tenant("Shop A"), await stack.tenant("Shop B")];
});
afterAll(async () => {
  await stack?.close();
  await smtp?.close();
});

const mailsTo = (to: string) => smtp.inbox.filter((m) => m.to.includes(to)).length;
/** Waits for `n` mails to `to`, then a moment more, and answers how many arrived (a late extra one would show). */
async function settledMails(to: string, n: number): Promise<number> {
  await waitFor(async () => mailsTo(to) >= n, 5_000);
  await new Promise((r) => setTimeout(r, 300));
  return mailsTo(to);
}
const codeOf = (to: string, nth: number) =>
  /verification code is (?:<\/p><p[^>]*>)?\s*([A-Z0-9]{6})/.exec(smtp.inbox.filter((m) => m.to.includes(to))[nth - 1].raw)?.[1];
const emailBody = (identifier: string) => ({ type: "email", channel: "email", identifier });
const total = async (key: string) => (await api(stack.url, key).get("/api/v1/verifications?limit=1")).body.pagination.total as number;

/** The 429 a tenant sees: rate_limited, Retry-After equal to error.retry_after, a positive number of seconds. */
function expectRateLimited(res: Parameters<typeof expectError>[0], maxSeconds: number): number {
  const e = expectError(res, 429, "rate_limited");
  const retry = Number(res.headers.get("retry-after"));
  expect(retry).toBeGreaterThan(0);
  expect(retry).toBeLessThanOrEqual(maxSeconds);
  expect(e.retry_after).toBe(retry);
  return retry;
}

describe("at most 5 codes per address in 10 minutes", () => {
  it("refuses the 6th email to one address (creates, a resend, another tenant) with 429 and Retry-After; no 6th mail, no verification stored", async () => {
    const to = "victim.one@example.com";
    const la = api(stack.url, a.liveKey);
    const first = await la.post("/api/v1/verifications", emailBody(to));
    expect(first.status, first.text).toBe(201);
    for (let i = 0; i < 2; i++) expect((await la.post("/api/v1/verifications", emailBody(to))).status).toBe(201);
    expect((await api(stack.url, b.liveKey).post("/api/v1/verifications", emailBody("Victim.One@Example.com"))).status).toBe(201);
    clock.advance(61_000);
    expect((await la.post(`/api/v1/verifications/${first.body.id}/resend`, {})).status).toBe(200);
    expect(await settledMails(to, 5)).toBe(5);

    const [beforeA, beforeB] = [await total(a.liveKey), await total(b.liveKey)];
    const sixth = await api(stack.url, b.liveKey).post("/api/v1/verifications", emailBody(to));
    const retry = expectRateLimited(sixth, 10 * 60 * 2);
    expect(sixth.body.error.message).toMatch(/too many codes were sent to this email address/);
    // a resend is refused the same way (not resend_too_soon: its own 60 s gap has passed)
    clock.advance(61_000);
    expectRateLimited(await la.post(`/api/v1/verifications/${first.body.id}/resend`, {}), 10 * 60 * 2);
    expect(await settledMails(to, 5)).toBe(5);
    expect([await total(a.liveKey), await total(b.liveKey)]).toEqual([beforeA, beforeB]);
    // the code mailed before the refused resend still works
    const ok = await la.post(`/api/v1/verifications/${first.body.id}/submit`, { challenge_code: codeOf(to, 5) });
    expect(ok.body.status, ok.text).toBe("verified");

    // another address is not affected; once Retry-After has passed the address gets codes again
    expect((await la.post("/api/v1/verifications", emailBody("someone.else@example.com"))).status).toBe(201);
    clock.advance(retry * 1000);
    expect((await la.post("/api/v1/verifications", emailBody(to))).status).toBe(201);
    expect(await settledMails(to, 6)).toBe(6);
  });

  it("counts mail to a domain's admin address like any other (domain verification by email)", async () => {
    const la = api(stack.url, a.liveKey);
    for (let i = 0; i < 4; i++)
      expect((await la.post("/api/v1/verifications", { type: "domain", channel: "email", identifier: "limits-shop.example" })).status).toBe(201);
    expect((await la.post("/api/v1/verifications", emailBody("admin@limits-shop.example"))).status).toBe(201);
    expectRateLimited(await la.post("/api/v1/verifications", { type: "domain", channel: "email", identifier: "https://www.Limits-Shop.example/" }), 1200);
    expect(await settledMails("admin@limits-shop.example", 5)).toBe(5);
  });

  it("test keys meet the same 429 in their own window (nothing is sent), which never blocks live sends", async () => {
    const ta = api(stack.url, a.testKey);
    const first = await ta.post("/api/v1/verifications", emailBody("test.only@example.com"));
    for (let i = 0; i < 4; i++) expect((await ta.post("/api/v1/verifications", emailBody("test.only@example.com"))).status).toBe(201);
    expectRateLimited(await ta.post("/api/v1/verifications", emailBody("test.only@example.com")), 1200);
    clock.advance(61_000);
    expectRateLimited(await ta.post(`/api/v1/verifications/${first.body.id}/resend`, {}), 1200);
    // the refused resend left no test message behind (only the code of the create is listed)
    const messages = await ta.get(`/api/v1/test/messages?verification_id=${first.body.id}`);
    expect(messages.body.data.map((m: { subject: string }) => m.subject)).toEqual([expect.stringMatching(/^Your verification code/)]);
    expect((await api(stack.url, b.testKey).post("/api/v1/verifications", emailBody("test.only@example.com"))).status).toBe(201);
    expect((await api(stack.url, a.liveKey).post("/api/v1/verifications", emailBody("test.only@example.com"))).status).toBe(201);
    expect(await settledMails("test.only@example.com", 1)).toBe(1);
  });
});

describe("a tenant's hourly send budget", () => {
  let small: Stack;
  beforeAll(async () => {
    small = await startStack({ SMTP_URL: smtp.url, SEND_BUDGET_PER_HOUR: "3" }, clock);
  });
  afterAll(async () => {
    await small?.close();
  });

  it("refuses the send past SEND_BUDGET_PER_HOUR with 429 and Retry-After, per tenant and environment; no mail", async () => {
    const [t, u] = [await small.tenant("Budget"), await small.tenant("Other")];
    const live = api(small.url, t.liveKey);
    for (const to of ["budget.1@example.com", "budget.2@example.com", "budget.3@example.com"]) {
      expect((await live.post("/api/v1/verifications", emailBody(to))).status).toBe(201);
    }
    const over = await live.post("/api/v1/verifications", emailBody("budget.4@example.com"));
    const retry = expectRateLimited(over, 2 * 3600);
    expect(over.body.error.message).toMatch(/budget of 3 codes sent per hour/);
    expect(await settledMails("budget.4@example.com", 0)).toBe(0);
    expect((await api(small.url, t.liveKey).get("/api/v1/verifications?limit=1")).body.pagination.total).toBe(3);
    // the refusal did not count against the address; other tenants and the test environment have their own budget
    expect((await api(small.url, u.liveKey).post("/api/v1/verifications", emailBody("budget.4@example.com"))).status).toBe(201);
    expect((await api(small.url, t.testKey).post("/api/v1/verifications", emailBody("budget.4@example.com"))).status).toBe(201);
    clock.advance(retry * 1000);
    expect((await live.post("/api/v1/verifications", emailBody("budget.5@example.com"))).status).toBe(201);
  });
});

describe("the hosted page starts an asset at most 3 times", () => {
  async function request(key: string, asset: Record<string, unknown> = { type: "email" }) {
    const r = await api(stack.url, key).post("/api/v1/verification-requests", { assets: [asset] });
    expect(r.status, r.text).toBe(201);
    const token = new URL(r.body.verification_url).hash.slice(1);
    const p = `/api/v1/verify/request/${r.body.id}`;
    const h = { "x-request-token": token };
    return {
      id: r.body.id as string,
      get: () => api(stack.url).get(p, h),
      start: (body: Record<string, unknown>) => api(stack.url).post(`${p}/assets/0/start`, body, h),
      submit: (code: string) => api(stack.url).post(`${p}/assets/0/submit`, { challenge_code: code }, h),
    };
  }

  it("after 3 starts that each used up their 5 tries, a 4th start is refused and the asset is failed; no 4th mail", async () => {
    const r = await request(a.liveKey);
    const to = "tries@example.com";
    for (let i = 1; i <= 3; i++) {
      const s = await r.start(i === 1 ? { identifier: to } : {});
      expect(s.status, s.text).toBe(200);
      for (let k = 0; k < 4; k++) expectError(await r.submit("ZZZZZ9"), 400, "invalid_code");
      expectError(await r.submit("ZZZZZ9"), 400, "max_attempts_exceeded");
      expect((await r.get()).body.assets[0].status).toBe("failed");
    }
    const fourth = await r.start({});
    expect(expectError(fourth, 400, "max_attempts_exceeded").message).toMatch(/started 3 times/);
    const page = (await r.get()).body;
    expect(page.assets[0]).toMatchObject({ status: "failed", challenge: null });
    expect((await api(stack.url, a.liveKey).get(`/api/v1/verification-requests/${r.id}`)).body.assets[0].status).toBe("failed");
    expectError(await r.start({}), 409, "invalid_state");
    expect(await settledMails(to, 3)).toBe(3);
  });

  it("counts the start made at creation (identifier and channel given); the 4th start fails the asset and stops its open code", async () => {
    const r = await request(a.testKey, { type: "email", identifier: "made.at.create@example.com", channel: "email" });
    for (let i = 0; i < 2; i++) {
      clock.advance(61_000);
      expect((await r.start({})).status).toBe(200);
    }
    const open = (await r.get()).body.assets[0];
    expect(open.status).toBe("in_progress");
    clock.advance(61_000);
    expectError(await r.start({}), 400, "max_attempts_exceeded");
    expect((await r.get()).body.assets[0].status).toBe("failed");
    expect((await api(stack.url, a.testKey).get(`/api/v1/verifications/${open.verification_id}`)).body.status).toBe("expired");
    // the request stays open (other assets could still complete it) and says the asset failed
    const rest = (await api(stack.url, a.testKey).get(`/api/v1/verification-requests/${r.id}`)).body;
    expect(rest.status).toBe("pending");
    expect(rest.assets[0]).toMatchObject({ status: "failed", verification_id: open.verification_id });
  });

  it("a start honours the per-address limit: refused with 429 and Retry-After, no mail, and the refused start is not counted", async () => {
    const victim = "hosted.victim@example.com";
    for (let i = 0; i < 5; i++) {
      const r = await request(b.liveKey);
      expect((await r.start({ identifier: victim })).status).toBe(200);
    }
    const r = await request(b.liveKey);
    const refused = await r.start({ identifier: victim });
    const retry = expectRateLimited(refused, 1200);
    expect(await settledMails(victim, 5)).toBe(5);
    expect((await r.get()).body.assets[0]).toMatchObject({ status: "pending", verification_id: null });
    // the refused start was not counted: the user picks another address and has all 3 starts
    expect((await r.start({ identifier: "hosted.friend@example.com" })).status).toBe(200);
    for (let i = 0; i < 2; i++) {
      clock.advance(61_000);
      expect((await r.start({})).status).toBe(200);
    }
    clock.advance(61_000);
    expectError(await r.start({}), 400, "max_attempts_exceeded");
    expect(await settledMails("hosted.friend@example.com", 3)).toBe(3);
    // and the victim's address takes codes again once Retry-After has passed
    clock.advance(retry * 1000);
    expect((await (await request(b.liveKey)).start({ identifier: victim })).status).toBe(200);
  });
});
