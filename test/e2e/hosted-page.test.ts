// The hosted page at verification_url: its token-only API (refusals: wrong token, another
// request's token, expiry, test-verify of a live request), its event stream, and the page itself
// driven in a real Chromium (playwright-core): a test-mode request with two assets completed end
// to end, live progress, the redirect, the CSP, no request to another origin, and screenshots.
import { existsSync, mkdirSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "@icv/platform";
import { expectError, waitFor } from "../support/expect-error.ts";
import { api, startStack, type Stack } from "../support/stack.ts";
import { sentCode } from "../support/sent-code.ts";

const CHROMIUM = "/usr/bin/chromium";
const ARTIFACTS = "test-artifacts";
const clock = new ManualClock(Date.now());
let stack: Stack;
let c: ReturnType<typeof api>;
let live: ReturnType<typeof api>;
let other: ReturnType<typeof api>;

// the tenant's site: where the page sends the user back
const visits: string[] = [];
const site = http.createServer((req, res) => {
  visits.push(req.url ?? "");
  res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end("<!doctype html><title>Back at the shop</title><h1>Back at the shop</h1>");
});
let siteUrl = "";

beforeAll(async () => {
  stack = await startStack({ SSE_HEARTBEAT_MS: "1000", ALLOW_PRIVATE_TARGETS: "true" }, clock);
  const t = await stack.tenant("Hosted");
  const o = await stack.tenant("Other");
  c = api(stack.url, t.testKey);
  live = api(stack.url, t.liveKey);
  other = api(stack.url, o.testKey);
  await new Promise<void>((r) => site.listen(0, "127.0.0.1", r));
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await stack?.close();
  site.close();
});

let n = 0;
const phone = () => `+370693${String(n++).padStart(5, "0")}`;

/** Creates a request; answers it with its id, token and page path. */
async function create(client: ReturnType<typeof api>, body: Record<string, unknown>) {
  const r = await client.post("/api/v1/verification-requests", body);
  expect(r.status, r.text).toBe(201);
  const url = new URL(r.body.verification_url);
  return { ...r.body, token: url.hash.slice(1), path: url.pathname + url.hash };
}
const twoAssets = (extra: Record<string, unknown> = {}) => ({
  assets: [{ type: "email" }, { type: "phone", identifier: phone(), channel: "telegram" }],
  action_context: { title: "Confirm your order", description: "Order 42 needs your email and phone." },
  ...extra,
});

const page = (id: string, token?: string) => {
  const h: Record<string, string> = token === undefined ? {} : { "x-request-token": token };
  const p = `/api/v1/verify/request/${id}`;
  return {
    get: () => api(stack.url).get(p, h),
    start: (i: number, body: Record<string, unknown>) => api(stack.url).post(`${p}/assets/${i}/start`, body, h),
    submit: (i: number, body: Record<string, unknown>) => api(stack.url).post(`${p}/assets/${i}/submit`, body, h),
    testVerify: (i: number) => api(stack.url).post(`${p}/assets/${i}/test-verify`, undefined, h),
  };
};

describe("the hosted page's API", () => {
  it("shows the request to its token: assets, channels, the phone challenge with a QR code; nothing of the tenant", async () => {
    const r = await create(
      c,
      twoAssets({
        redirect_url: `${siteUrl}/done?order=42`,
        callback_url: `${siteUrl}/hook-secret`,
        client_metadata: { secret: "x" },
        external_user_id: "u-1",
      }),
    );
    const res = await page(r.id, r.token).get();
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    const s = res.body;
    expect(s).toMatchObject({
      id: r.id,
      status: "pending",
      action_type: "verification",
      test_mode: true,
      has_redirect: true,
      redirect_to: null,
      token_expired: false,
    });
    expect(s.action_context).toEqual({ title: "Confirm your order", description: "Order 42 needs your email and phone." });
    // no branded project: the page names the tenant (its name at tenant create), so it says who is asking
    expect(s.branding).toEqual({ business_name: "Hosted", logo_url: null, primary_color: null, support_email: null });
    expect(s.assets[0]).toMatchObject({
      index: 0,
      type: "email",
      identifier: null,
      status: "pending",
      channels: ["email"],
      available_channels: ["email"],
      challenge: null,
    });
    const p = s.assets[1];
    expect(p).toMatchObject({ index: 1, type: "phone", channel: "telegram", status: "in_progress", method: "code" });
    expect(p.challenge.code).toMatch(/^[A-Z0-9]{6}$/);
    // test mode without a configured bot: the placeholder bot is not ours, so no link and no QR code to it
    expect(p.challenge.deep_link).toBeUndefined();
    expect(p.challenge.qr_code).toBeUndefined();
    for (const secret of ["callback_url", "client_metadata", "external_user_id", "hook-secret", "u-1", "proof"]) expect(res.text).not.toContain(secret);
  });

  it("refuses a missing, wrong or foreign token with 404, and another tenant's request id with its own token", async () => {
    const a = await create(c, twoAssets());
    const b = await create(other, twoAssets());
    expectError(await page(a.id).get(), 404, "not_found");
    expectError(await page(a.id, "nonsense").get(), 404, "not_found");
    expectError(await page(a.id, a.token.slice(0, -2) + (a.token.endsWith("AA") ? "BB" : "AA")).get(), 404, "not_found");
    expectError(await page(a.id, b.token).get(), 404, "not_found");
    expectError(await page(b.id, a.token).start(0, { identifier: "x@example.com" }), 404, "not_found");
    expectError(await page(a.id, b.token).testVerify(1), 404, "not_found");
    expectError(await page(a.id, a.token).start(7, { identifier: "x@example.com" }), 404, "not_found");
    // its own token still works, and no other call changed it
    expect((await page(a.id, a.token).get()).body.assets[0].status).toBe("pending");
  });

  it("starts an asset with the user's identifier, checks the code, completes it in test mode", async () => {
    const r = await create(c, twoAssets());
    const p = page(r.id, r.token);
    expectError(await p.start(0, {}), 400, "validation_error");
    expectError(await p.start(0, { identifier: "not an email" }), 400, "invalid_identifier");
    expectError(await p.start(0, { identifier: "a@example.com", channel: "sms" }), 400, "validation_error");
    expectError(await p.submit(0, { challenge_code: "ABC123" }), 409, "invalid_state");
    const started = await p.start(0, { identifier: "Buyer@Example.com" });
    expect(started.status, started.text).toBe(200);
    const a = started.body.assets[0];
    expect(a).toMatchObject({ status: "in_progress", identifier: "buyer@example.com", channel: "email", method: "code" });
    expect(a.challenge.code).toBeUndefined(); // mailed, never shown
    expect(a.challenge.attempts_remaining).toBe(5);
    const wrong = expectError(await p.submit(0, { challenge_code: "ZZZZZZ" }), 400, "invalid_code");
    expect(wrong.attempts_remaining).toBe(4);
    // the tenant sees the asset and its verification like any other
    const rest = await c.get(`/api/v1/verification-requests/${r.id}`);
    expect(rest.body.assets[0]).toMatchObject({
      identifier: "buyer@example.com",
      channel: "email",
      status: "in_progress",
      verification_id: a.verification_id,
    });
    // starting again mails a new code: not before the resend gap
    const soon = expectError(await p.start(0, {}), 429, "resend_too_soon");
    expect(soon.retry_after).toBeGreaterThan(0);
    clock.advance(61_000);
    const again = await p.start(0, {});
    expect(again.status, again.text).toBe(200);
    expect(again.body.assets[0].verification_id).not.toBe(a.verification_id);
    expect(again.body.assets[0].challenge.attempts_remaining).toBe(5);
    // the replaced verification stopped: its code no longer counts
    expect((await c.get(`/api/v1/verifications/${a.verification_id}`)).body.status).toBe("expired");
    const done = await p.testVerify(0);
    expect(done.body.assets[0].status).toBe("verified");
    expect(done.body.status).toBe("partial");
    expectError(await p.start(0, { identifier: "b@example.com" }), 409, "already_verified");
  });

  it("phone: the shown code is refused; outbound sends a code (never shown) that completes the asset, and a restart keeps the resend gap", async () => {
    const r = await create(c, { assets: [{ type: "phone", allowed_channels: ["sms", "telegram"] }] });
    const p = page(r.id, r.token);
    const inbound = (await p.start(0, { identifier: phone(), channel: "sms" })).body.assets[0];
    expect(inbound).toMatchObject({ status: "in_progress", delivery: "inbound", method: "code" });
    expectError(await p.submit(0, { challenge_code: inbound.challenge.code }), 409, "invalid_state");
    expectError(await p.start(0, { channel: "telegram", delivery: "outbound" }), 400, "validation_error");

    const started = await p.start(0, { channel: "sms", delivery: "outbound" });
    expect(started.status, started.text).toBe(200);
    const a = started.body.assets[0];
    expect(a).toMatchObject({ status: "in_progress", channel: "sms", delivery: "outbound", method: "code" });
    expect(a.challenge.code).toBeUndefined();
    expect(a.challenge.deep_link).toBeUndefined();
    expect(a.challenge.qr_code).toBeUndefined();
    expectError(await p.start(0, { channel: "sms", delivery: "outbound" }), 429, "resend_too_soon");
    const code = await sentCode(c, a.verification_id);
    const done = await p.submit(0, { challenge_code: code });
    expect(done.status, done.text).toBe(200);
    expect(done.body.assets[0].status).toBe("verified");
    expect(done.body.status).toBe("completed");
  });

  it("refuses test-verify on a live request, and shows unconfigured live channels as unavailable", async () => {
    const r = await create(live, { assets: [{ type: "email" }, { type: "phone", allowed_channels: ["telegram", "sms"] }] });
    const p = page(r.id, r.token);
    const s = (await p.get()).body;
    expect(s.test_mode).toBe(false);
    expect(s.assets[0]).toMatchObject({ channels: ["email"], available_channels: [] });
    expect(s.assets[1]).toMatchObject({ channels: ["telegram", "sms"], available_channels: [] });
    expectError(await p.testVerify(0), 403, "test_mode_required");
    expectError(await p.start(0, { identifier: "a@example.com" }), 400, "channel_unavailable");
  });

  it("streams the page state: connected, then request on every change, until the request is final", async () => {
    const r = await create(c, twoAssets());
    const ctl = new AbortController();
    const res = await fetch(`${stack.url}/api/v1/verify/request/${r.id}/events?token=${encodeURIComponent(r.token)}`, {
      signal: ctl.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const reader = res.body!.getReader();
    let text = "";
    const until = async (re: RegExp) => {
      const end = Date.now() + 10_000;
      while (!re.test(text) && Date.now() < end) {
        const { value, done } = await reader.read();
        if (done) break;
        text += new TextDecoder().decode(value);
      }
      return re.test(text);
    };
    expect(await until(/event: connected\n/)).toBe(true);
    expect(await until(/event: request\ndata: .*"status":"pending"/)).toBe(true);
    // the phone asset is completed through the tenant's API: the page hears of it
    const vid = (await page(r.id, r.token).get()).body.assets[1].verification_id;
    expect((await c.post(`/api/v1/verifications/${vid}/test-verify`)).status).toBe(200);
    expect(await until(/"index":1,[^}]*"status":"verified"/)).toBe(true);
    await page(r.id, r.token).start(0, { identifier: "s@example.com" });
    await page(r.id, r.token).testVerify(0);
    expect(await until(/event: request\ndata: \{"id":"[^"]+","status":"completed"/)).toBe(true);
    ctl.abort();
    expectError(await api(stack.url).get(`/api/v1/verify/request/${r.id}/events?token=wrong`), 404, "not_found");
  });
});

describe.skipIf(!existsSync(CHROMIUM))(
  `the page in Chromium${existsSync(CHROMIUM) ? "" : " (skipped: /usr/bin/chromium is absent; .ci/run installs it)"}`,
  () => {
    it("completes a two-asset test request end to end, with live progress and the redirect", { timeout: 90_000 }, async () => {
      const { chromium } = await import("playwright-core");
      mkdirSync(ARTIFACTS, { recursive: true });
      const r = await create(c, twoAssets({ redirect_url: `${siteUrl}/done?order=42` }));
      const gateway = new URL(stack.url).origin;
      const browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: [
          "--headless",
          "--no-sandbox",
          "--disable-gpu",
          "--disable-quic",
          "--no-first-run",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-sync",
        ],
      });
      try {
        const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
        const tab = await context.newPage();
        const origins = new Set<string>();
        tab.on("request", (q) => {
          if (!q.url().startsWith("data:")) origins.add(new URL(q.url()).origin);
        });
        const violations: string[] = [];
        tab.on("console", (m) => {
          if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
        });

        const res = await tab.goto(stack.url + r.path);
        expect(res!.status()).toBe(200);
        const csp = res!.headers()["content-security-policy"];
        expect(csp).toBe(
          "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        );
        expect(res!.headers()["referrer-policy"]).toBe("no-referrer");
        expect(res!.headers()["set-cookie"]).toBeUndefined();

        await tab.getByRole("heading", { level: 1, name: "Confirm your order" }).waitFor();
        const email = tab.locator("#asset-0");
        const phoneCard = tab.locator("#asset-1");
        await expect.poll(() => tab.locator("#progress").textContent()).toBe("0 of 2 verified");
        // the phone challenge: the code, and no link or QR code to the test placeholder bot (not ours)
        const code = await phoneCard.locator(".code").textContent();
        expect(code).toMatch(/^[A-Z0-9]{6}$/);
        expect(await phoneCard.getByRole("link").count()).toBe(0);
        expect(await phoneCard.getByRole("img").count()).toBe(0);
        expect(await phoneCard.textContent()).toContain("Test mode: there is no Telegram bot to open.");
        // a code the page shows is never typed back into it: no code box for the reverse-OTP code
        expect(await phoneCard.locator("input[name=challenge_code]").count()).toBe(0);

        await tab.setViewportSize({ width: 360, height: 780 });
        await tab.screenshot({ path: `${ARTIFACTS}/hosted-page-360-start.png`, fullPage: true });
        await tab.setViewportSize({ width: 1280, height: 900 });

        // the user gives the email address the request left open, and starts it
        await email.getByLabel("Your email address").fill("shopper@example.com");
        await email.getByRole("button", { name: "Start" }).click();
        await email.getByLabel("Code from the email").waitFor();
        expect(await tab.evaluate(() => document.activeElement?.id)).toBe("challenge_code-0");
        await expect.poll(() => email.locator(".status").textContent()).toBe("In progress");
        // test mode sends nothing, and the page does not claim otherwise
        expect(await email.textContent()).toContain("Test mode: no email is sent.");
        expect(await email.textContent()).not.toContain("We sent");
        expect(await email.textContent()).toContain("5 attempts left");
        // a wrong code: the error beside its field, the attempts as the API now counts them
        await email.getByLabel("Code from the email").fill("ZZZZZZ");
        await email.getByRole("button", { name: "Confirm" }).click();
        await expect.poll(() => email.locator(".field-error").textContent()).toMatch(/.+/);
        expect(await tab.locator("#alert").isHidden()).toBe(true);
        await expect.poll(() => email.textContent()).toContain("4 attempts left");
        expect(await email.getByLabel("Code from the email").getAttribute("aria-invalid")).toBe("true");

        await tab.screenshot({ path: `${ARTIFACTS}/hosted-page-1280.png`, fullPage: true });
        await tab.setViewportSize({ width: 360, height: 780 });
        expect(await tab.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
        await tab.screenshot({ path: `${ARTIFACTS}/hosted-page-360.png`, fullPage: true });

        // live progress: the phone is verified elsewhere (the bot, here the tenant's test-verify)
        const vid = (await page(r.id, r.token).get()).body.assets[1].verification_id;
        expect((await c.post(`/api/v1/verifications/${vid}/test-verify`)).status).toBe(200);
        await expect.poll(() => phoneCard.locator(".status").textContent(), { timeout: 10_000 }).toBe("Verified");
        await expect.poll(() => tab.locator("#progress").textContent()).toBe("1 of 2 verified");

        // the last step from the page; then back to the tenant's site
        await email.getByRole("button", { name: "Complete this step (test mode)" }).click();
        await tab.waitForURL((u) => u.origin === siteUrl, { timeout: 15_000 });
        const back = new URL(tab.url());
        expect(back.pathname).toBe("/done");
        expect(back.searchParams.get("order")).toBe("42");
        expect(back.searchParams.get("request_id")).toBe(r.id);
        expect(back.searchParams.get("status")).toBe("completed");
        expect(visits.some((v) => v.includes(`request_id=${r.id}`))).toBe(true);

        expect([...origins].sort()).toEqual([gateway, siteUrl].sort());

        // a link with a wrong token says so, and the page stays usable by keyboard and screen reader
        await tab.goto(`${stack.url}/verify/${r.id}#not-the-token`);
        await expect.poll(() => tab.getByRole("alert").textContent()).toBe("This verification link is not valid. Check that you opened the whole link.");
        expect(await tab.evaluate(() => document.activeElement?.id)).toBe("alert");
        expect(violations).toEqual([]);
        const rest = await c.get(`/api/v1/verification-requests/${r.id}`);
        expect(rest.body.status).toBe("completed");
        await context.close();
      } finally {
        await browser.close();
      }
    });
  },
);

describe.skipIf(!existsSync(CHROMIUM))("a phone on the page, in Chromium", () => {
  it("offers both ways; with a code by SMS it asks for the code that was sent, never one it showed", { timeout: 60_000 }, async () => {
    const { chromium } = await import("playwright-core");
    const r = await create(c, { assets: [{ type: "phone", allowed_channels: ["sms", "telegram"] }] });
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
    try {
      const tab = await browser.newPage({ viewport: { width: 360, height: 780 } });
      await tab.goto(stack.url + r.path);
      const card = tab.locator("#asset-0");
      await card.getByLabel("Your phone number (with country code)").fill(phone());
      // Telegram cannot send a code to a number: the outbound way is offered for SMS only
      await card.getByLabel("Telegram").check();
      expect(await card.getByLabel("Get a code by SMS or WhatsApp").isDisabled()).toBe(true);
      await card.getByLabel("SMS", { exact: true }).check();
      await card.getByLabel("Get a code by SMS or WhatsApp").check();
      await card.getByRole("button", { name: "Start" }).click();
      const box = card.getByLabel("Code from the SMS message");
      await box.waitFor();
      expect(await card.locator(".code").count()).toBe(0);
      expect(await card.locator("a.button").count()).toBe(0);
      await tab.screenshot({ path: `${ARTIFACTS}/hosted-page-360-phone-outbound.png`, fullPage: true });
      const vid = (await page(r.id, r.token).get()).body.assets[0].verification_id;
      await box.fill(await sentCode(c, vid));
      await card.getByRole("button", { name: "Confirm" }).click();
      await expect.poll(() => card.locator(".status").textContent(), { timeout: 10_000 }).toBe("Verified");
    } finally {
      await browser.close();
    }
  });
});

describe.skipIf(!existsSync(CHROMIUM))("smart reuse on the page", () => {
  it("offers the user's existing proof and completes the asset with it", { timeout: 60_000 }, async () => {
    const { chromium } = await import("playwright-core");
    const before = await c.post("/api/v1/verifications", {
      type: "email",
      channel: "email",
      identifier: "returning@example.com",
      external_user_id: "shopper-7",
    });
    expect((await c.post(`/api/v1/verifications/${before.body.id}/test-verify`)).status).toBe(200);
    const r = await create(c, { assets: [{ type: "email" }], external_user_id: "shopper-7" });
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
    try {
      const tab = await browser.newPage({ viewport: { width: 360, height: 780 } });
      await tab.goto(stack.url + r.path);
      const offer = tab.getByRole("button", { name: /^Use my existing proof for / });
      await offer.waitFor();
      await tab.screenshot({ path: `${ARTIFACTS}/hosted-page-360-reuse.png`, fullPage: true });
      await offer.click();
      await expect.poll(() => tab.locator("#asset-0 .status").textContent(), { timeout: 10_000 }).toBe("Verified");
      await expect.poll(() => tab.locator("#final-text").textContent()).toBe("Everything is verified. Thank you!");
      const rest = await c.get(`/api/v1/verification-requests/${r.id}`);
      expect(rest.body.status).toBe("completed");
    } finally {
      await browser.close();
    }
  });
});

describe("expiry", () => {
  it("refuses actions once the request expired; the page still learns the final status, nothing more", async () => {
    const r = await create(c, twoAssets({ expires_in: 60, redirect_url: `${siteUrl}/back` }));
    const p = page(r.id, r.token);
    expect((await p.get()).status).toBe(200);
    clock.advance(61_000);
    expectError(await p.start(0, { identifier: "late@example.com" }), 410, "request_expired");
    expectError(await p.testVerify(1), 410, "request_expired");
    expectError(await p.submit(1, { challenge_code: "ABC123" }), 410, "request_expired");
    const s = await waitFor(async () => {
      const g = await p.get();
      return g.body?.status === "expired" ? g : undefined;
    }, 5000);
    expect(s!.body).toMatchObject({
      status: "expired",
      token_expired: true,
      assets: [],
      action_context: { title: null, description: null },
    });
    expect(s!.body.redirect_to).toBe(`${siteUrl}/back?request_id=${r.id}&status=expired`);
    // another request's expired token is still just not_found
    expectError(await page("vreq_01M80000000000000000000000", r.token).get(), 404, "not_found");
  });
});
