// POST /api/v1/verifications/:id/resend over a real SMTP server, with a clock the test moves by
// hand: a new code arrives and the old one stops working, at most once per 60 s (Retry-After),
// 5 times in all, email channels and pending verifications only, never across tenants, and two
// concurrent resends never both pass.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "@icv/platform";
import { api, startStack, type Stack, type TenantKeys } from "../support/stack.ts";
import { startSmtp, type ReceivedMail } from "../support/smtp.ts";
import { SMTPServer } from "smtp-server";
import type { AddressInfo } from "node:net";
import { expectError, waitFor } from "../support/expect-error.ts";

const EMAIL_TTL_MS = 30 * 60_000;
const clock = new ManualClock(Date.now());
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let stack: Stack;
let t: TenantKeys;

beforeAll(async () => {
  smtp = await startSmtp();
  stack = await startStack({ SMTP_URL: smtp.url, SMTP_FROM: "ICV Codes <codes@icv.test>" }, clock);
  t = await stack.tenant("Resend");
});
afterAll(async () => {
  await stack?.close();
  await smtp?.close();
});

/** The message as a reader sees it: quoted-printable soft breaks and escapes undone. */
const decoded = (m: ReceivedMail) => m.raw.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
const codeIn = (m: ReceivedMail) => /verification code is (?:<\/p><p[^>]*>)?\s*([A-Z0-9]{6})/.exec(decoded(m))?.[1];
const mailsTo = (to: string) => smtp.inbox.filter((m) => m.to.includes(to));

async function nthMail(to: string, n: number): Promise<ReceivedMail> {
  const got = await waitFor(async () => mailsTo(to).length >= n, 5_000);
  expect(got, `mail #${n} to ${to}`).toBe(true);
  return mailsTo(to)[n - 1];
}

async function createEmail(key: string, identifier: string, extra: Record<string, string> = {}) {
  const r = await api(stack.url, key).post("/api/v1/verifications", { type: "email", channel: "email", identifier, ...extra });
  expect(r.status, r.text).toBe(201);
  return r.body;
}

const resend = (key: string, id: string) => api(stack.url, key).post(`/api/v1/verifications/${id}/resend`, {});

describe("resend of an email code", () => {
  it("mails a new code after 60 s; the old code no longer verifies, the new one does", async () => {
    const live = api(stack.url, t.liveKey);
    const v = await createEmail(t.liveKey, "resend.one@example.com");
    const first = codeIn(await nthMail("resend.one@example.com", 1));
    expect(first).toMatch(/^[A-Z0-9]{6}$/);

    const early = await resend(t.liveKey, v.id);
    const e = expectError(early, 429, "resend_too_soon");
    expect(early.headers.get("retry-after")).toBe("60");
    expect(e.retry_after).toBe(60);

    clock.advance(45_000);
    const later = await resend(t.liveKey, v.id);
    expectError(later, 429, "resend_too_soon");
    expect(later.headers.get("retry-after")).toBe("15");
    expect(later.body.error.retry_after).toBe(15);

    clock.advance(15_000);
    const r = await resend(t.liveKey, v.id);
    expect(r.status, r.text).toBe(200);
    const newExpiry = new Date(clock.now().getTime() + EMAIL_TTL_MS).toISOString();
    expect(r.body).toMatchObject({
      success: true,
      id: v.id,
      status: "pending",
      expires_at: newExpiry,
      resends_remaining: 4,
      test_mode: false,
    });
    expect(r.body.challenge.expires_at).toBe(newExpiry);
    expect(r.body.message).toMatch(/r\*\*\*e@example\.com/);
    expect(r.text).not.toMatch(/"code"/);

    const mail = await nthMail("resend.one@example.com", 2);
    expect(mail.from).toBe("codes@icv.test");
    const text = decoded(mail);
    expect(text).toMatch(/Content-Type: text\/plain/i);
    expect(text).toMatch(/Content-Type: text\/html/i);
    expect(text).toMatch(/Subject: Your new verification code/);
    expect(text).toMatch(/expires in 30 minutes/);
    expect(text).toMatch(/earlier codes no longer work/);
    const second = codeIn(mail)!;
    expect(second).toMatch(/^[A-Z0-9]{6}$/);
    expect(second).not.toBe(first);
    expect(r.text).not.toContain(second);

    const get = await live.get(`/api/v1/verifications/${v.id}`);
    expect(get.body.challenge.expires_at).toBe(newExpiry);

    const old = await live.post(`/api/v1/verifications/${v.id}/submit`, { challenge_code: first });
    expect(expectError(old, 400, "invalid_code").attempts_remaining).toBe(4);
    const ok = await live.post(`/api/v1/verifications/${v.id}/submit`, { challenge_code: second });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.status).toBe("verified");

    clock.advance(60_000);
    expectError(await resend(t.liveKey, v.id), 409, "invalid_state");
    expect(mailsTo("resend.one@example.com")).toHaveLength(2);
  });

  it("the new challenge outlives the old one: a resent code works past the first expiry", async () => {
    const live = api(stack.url, t.liveKey);
    const v = await createEmail(t.liveKey, "resend.late@example.com");
    await nthMail("resend.late@example.com", 1);
    clock.advance(EMAIL_TTL_MS - 60_000);
    expect((await resend(t.liveKey, v.id)).status).toBe(200);
    const code = codeIn(await nthMail("resend.late@example.com", 2))!;
    clock.advance(2 * 60_000); // past the first challenge's expiry, within the new one
    const ok = await live.post(`/api/v1/verifications/${v.id}/submit`, { challenge_code: code });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.status).toBe("verified");
  });

  it("allows 5 resends in all; the 6th is invalid_state with resends_remaining 0 (test keys send nothing, the rules hold)", async () => {
    const before = smtp.inbox.length;
    const v = await createEmail(t.testKey, "resend.five@example.com");
    for (let i = 1; i <= 5; i++) {
      // 3 min apart: six codes to one address within 10 minutes would meet the send limit (docs/send-limits.md)
      clock.advance(180_000);
      const r = await resend(t.testKey, v.id);
      expect(r.status, r.text).toBe(200);
      expect(r.body).toMatchObject({ success: true, resends_remaining: 5 - i, test_mode: true });
      expect(r.body.expires_at).toBe(new Date(clock.now().getTime() + EMAIL_TTL_MS).toISOString());
      expect(r.body.message).toMatch(/test mode/i);
      if (i < 5) expectError(await resend(t.testKey, v.id), 429, "resend_too_soon");
    }
    clock.advance(60_000);
    const sixth = await resend(t.testKey, v.id);
    expect(expectError(sixth, 409, "invalid_state").resends_remaining).toBe(0);
    expect(sixth.headers.get("retry-after")).toBeNull();
    expect((await api(stack.url, t.testKey).get(`/api/v1/verifications/${v.id}`)).body.status).toBe("pending");
    expect(smtp.inbox.length).toBe(before);
  });

  it("a domain verification by email resends to the domain's admin address", async () => {
    const live = api(stack.url, t.liveKey);
    const r = await live.post("/api/v1/verifications", { type: "domain", channel: "email", identifier: "resend-domain.example" });
    expect(r.status, r.text).toBe(201);
    await nthMail("admin@resend-domain.example", 1);
    clock.advance(60_000);
    const again = await resend(t.liveKey, r.body.id);
    expect(again.status, again.text).toBe(200);
    expect(again.body.expires_at).toBe(new Date(clock.now().getTime() + 24 * 60 * 60_000).toISOString());
    const code = codeIn(await nthMail("admin@resend-domain.example", 2))!;
    const ok = await live.post(`/api/v1/verifications/${r.body.id}/submit`, { challenge_code: code });
    expect(ok.body.status).toBe("verified");
  });

  it("answers resend_not_supported for a verification that is not sent by email", async () => {
    const c = api(stack.url, t.testKey);
    for (const body of [
      { type: "phone", channel: "sms", identifier: "+37069100031" },
      { type: "domain", channel: "dns", identifier: "resend-dns.example" },
    ]) {
      const v = await c.post("/api/v1/verifications", body);
      expect(v.status, v.text).toBe(201);
      clock.advance(60_000);
      expectError(await resend(t.testKey, v.body.id), 400, "resend_not_supported");
    }
  });

  it("answers invalid_state for a verified, failed or expired verification", async () => {
    const c = api(stack.url, t.testKey);
    const verified = await createEmail(t.testKey, "resend.done@example.com");
    expect((await c.post(`/api/v1/verifications/${verified.id}/test-verify`, {})).status).toBe(200);
    const failed = await createEmail(t.testKey, "resend.failed@example.com");
    for (let i = 0; i < 5; i++) await c.post(`/api/v1/verifications/${failed.id}/submit`, { challenge_code: "ZZZZZZ" });
    expect((await c.get(`/api/v1/verifications/${failed.id}`)).body.status).toBe("failed");
    const expired = await createEmail(t.testKey, "resend.expired@example.com");
    clock.advance(EMAIL_TTL_MS + 1_000);
    for (const id of [verified.id, failed.id, expired.id]) expectError(await resend(t.testKey, id), 409, "invalid_state");
    expect((await c.get(`/api/v1/verifications/${expired.id}`)).body.status).toBe("expired");
  });

  it("answers 404 for another tenant's or the other environment's verification, and changes nothing", async () => {
    const other = await stack.tenant("Other");
    const v = await createEmail(t.testKey, "resend.mine@example.com");
    clock.advance(60_000);
    expectError(await resend(other.testKey, v.id), 404, "not_found");
    expectError(await resend(t.liveKey, v.id), 404, "not_found");
    expectError(await resend(t.testKey, "ver_01JZZZZZZZZZZZZZZZZZZZZZZZ"), 404, "not_found");
    const r = await resend(t.testKey, v.id);
    expect(r.status, r.text).toBe(200);
    expect(r.body.resends_remaining).toBe(4);
  });

  it("lets exactly one of several simultaneous resends through, and sends one mail", async () => {
    const v = await createEmail(t.liveKey, "resend.race@example.com");
    await nthMail("resend.race@example.com", 1);
    clock.advance(60_000);
    const answers = await Promise.all(Array.from({ length: 6 }, () => resend(t.liveKey, v.id)));
    const ok = answers.filter((a) => a.status === 200);
    expect(ok, answers.map((a) => `${a.status} ${a.text}`).join("\n")).toHaveLength(1);
    for (const a of answers.filter((x) => x.status !== 200)) expectError(a, 429, "resend_too_soon");
    expect(ok[0].body.resends_remaining).toBe(4);
    const code = codeIn(await nthMail("resend.race@example.com", 2))!;
    await new Promise((r) => setTimeout(r, 300));
    expect(mailsTo("resend.race@example.com")).toHaveLength(2);
    const done = await api(stack.url, t.liveKey).post(`/api/v1/verifications/${v.id}/submit`, { challenge_code: code });
    expect(done.body.status).toBe("verified");
  });
});

describe("resend when the mail cannot be sent", () => {
  it("answers service_unavailable and changes nothing: the old code still verifies, the 60 s and 5-resend budget are untouched", async () => {
    // a real SMTP server that accepts the first message and refuses the rest with a 451
    let accepted: string[] = [];
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ["STARTTLS", "AUTH"],
      logger: false,
      closeTimeout: 500, // the service's pooled SMTP connection stays open; do not wait 30 s for it
      onData(stream, _session, callback) {
        let raw = "";
        stream.on("data", (c: Buffer) => (raw += c.toString("utf8")));
        stream.on("end", () => {
          if (accepted.length > 0) {
            const err = Object.assign(new Error("try later"), { responseCode: 451 });
            return callback(err);
          }
          accepted = [...accepted, raw];
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.server.address() as AddressInfo).port;
    const clock2 = new ManualClock(Date.now());
    const s2 = await startStack({ SMTP_URL: `smtp://127.0.0.1:${port}` }, clock2);
    try {
      const k = await s2.tenant("Flaky mail");
      const live = api(s2.url, k.liveKey);
      const v = await live.post("/api/v1/verifications", { type: "email", channel: "email", identifier: "flaky@example.com" });
      expect(v.status, v.text).toBe(201);
      expect(await waitFor(async () => accepted.length === 1, 5_000)).toBe(true);
      const code = /verification code is (?:<\/p><p[^>]*>)?\s*([A-Z0-9]{6})/.exec(accepted[0].replace(/=\r?\n/g, ""))![1];

      clock2.advance(60_000);
      expectError(await live.post(`/api/v1/verifications/${v.body.id}/resend`, {}), 503, "service_unavailable");
      const after = await live.get(`/api/v1/verifications/${v.body.id}`);
      expect(after.body.challenge.expires_at).toBe(v.body.challenge.expires_at);
      // the failed resend used neither the 60 s gap nor a resend: the next try is allowed at once (and fails the same way)
      expectError(await live.post(`/api/v1/verifications/${v.body.id}/resend`, {}), 503, "service_unavailable");

      const ok = await live.post(`/api/v1/verifications/${v.body.id}/submit`, { challenge_code: code });
      expect(ok.status, ok.text).toBe(200);
      expect(ok.body.status).toBe("verified");
    } finally {
      await s2.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }, 120_000);
});
