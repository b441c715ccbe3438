// The sessions' hosted page (session_url in every session answer): its API shows what the user
// may see (status, deep link, QR code, instructions, who is asking) to the signature of its URL
// only, never the number, the proof or the tenant's metadata; the page itself in a real Chromium
// follows the session live. The docs screenshots of both hosted pages (the request page and the
// session page, at 1280 and 390 px, showing the tenant's name) are taken here when absent
// (delete them to retake).
import { existsSync, mkdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { expectError } from "../support/expect-error.ts";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";

const CHROMIUM = "/usr/bin/chromium";
const ARTIFACTS = "test-artifacts";
const stack = useStack({ SSE_HEARTBEAT_MS: "1000" });
const t = useTenant(stack, "Acme Shop");
const other = useTenant(stack, "Other");

/** The page's URL on this stack, and the signature in its fragment. */
const pageOf = (sessionUrl: string) => {
  const u = new URL(sessionUrl);
  return { path: `${u.pathname}${u.hash}`, id: u.pathname.split("/").pop()!, signature: u.hash.slice(1) };
};
const state = (id: string, signature?: string) =>
  api(stack.url).get(`/api/v1/session-page/${id}`, signature === undefined ? {} : { "x-session-token": signature });

describe("the session page's API", () => {
  it("answers what the user may see to session_url's signature, and the tenant's name as who is asking", async () => {
    const c = api(stack.url, t.testKey);
    const s = await c.post("/api/v1/sessions", { channel: "whatsapp", client_metadata: { secret: "tenant-only" } });
    expect(s.status).toBe(201);
    expect(s.body.session_url).toMatch(new RegExp(`/session/${s.body.id}#[A-Za-z0-9_-]{22}$`));
    const p = pageOf(s.body.session_url);
    const r = await state(p.id, p.signature);
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get("cache-control")).toBe("no-store");
    expect(r.body).toEqual({
      id: s.body.id,
      kind: "phone",
      type: null,
      channel: "whatsapp",
      status: "pending",
      deep_link: s.body.deep_link,
      qr_code: expect.stringMatching(/^data:image\/png;base64,/),
      instructions: s.body.instructions,
      expires_at: s.body.expires_at,
      test_mode: true,
      business_name: "Acme Shop",
    });
    expect(r.text).not.toContain("tenant-only");

    // verified: the number and the proof stay with the tenant
    const done = await c.post(`/api/v1/sessions/${s.body.id}/test-verify`);
    expect(done.body.status).toBe("verified");
    const after = await state(p.id, p.signature);
    expect(after.body).toMatchObject({ status: "verified", deep_link: null, qr_code: null });
    for (const hidden of ["+15555550100", done.body.proof.token, done.body.verification_id]) expect(after.text).not.toContain(hidden);
    expect((await c.get(`/api/v1/sessions/${s.body.id}`)).body.session_url).toBe(s.body.session_url);
  });

  it("serves auth sessions too, without the number that must answer", async () => {
    const c = api(stack.url, t.testKey);
    const s = await c.post("/api/v1/auth/sessions", { channel: "whatsapp", phone_number: "+37069100077", type: "login" });
    const p = pageOf(s.body.session_url);
    const r = await state(p.id, p.signature);
    expect(r.body).toMatchObject({ kind: "auth", type: "login", status: "pending", business_name: "Acme Shop" });
    expect(r.text).not.toContain("37069100077");
  });

  it("refuses a missing or wrong signature, another session's, and a malformed id, all as 404", async () => {
    const a = pageOf((await api(stack.url, t.testKey).post("/api/v1/sessions", { channel: "telegram" })).body.session_url);
    const b = pageOf((await api(stack.url, other.testKey).post("/api/v1/sessions", { channel: "telegram" })).body.session_url);
    expectError(await state(a.id), 404, "not_found");
    expectError(await state(a.id, "A".repeat(22)), 404, "not_found");
    expectError(await state(a.id, b.signature), 404, "not_found");
    expectError(await state("sess_nope", a.signature), 404, "not_found");
    // test mode without a configured bot: no link, and no QR code, to the placeholder bot (not ours)
    expect((await state(a.id, a.signature)).body).toMatchObject({ channel: "telegram", deep_link: null, qr_code: null });
  });
});

describe.skipIf(!existsSync(CHROMIUM))(
  `the hosted pages in Chromium${existsSync(CHROMIUM) ? "" : " (skipped: /usr/bin/chromium is absent; .ci/run installs it)"}`,
  () => {
    it("the session page follows the session live; the docs screenshots of both pages name the tenant", { timeout: 120_000 }, async () => {
      const { chromium } = await import("playwright-core");
      mkdirSync(ARTIFACTS, { recursive: true });
      const c = api(stack.url, t.testKey);
      const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"] });
      const shot = async (tab: import("playwright-core").Page, name: string, width: number) => {
        await tab.setViewportSize({ width, height: width > 600 ? 820 : 780 });
        expect(await tab.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
        await tab.screenshot({ path: `${ARTIFACTS}/${name}-${width}.png`, fullPage: true });
        if (!existsSync(`docs/${name}-${width}.png`)) await tab.screenshot({ path: `docs/${name}-${width}.png`, fullPage: true });
      };
      try {
        const tab = await (await browser.newContext({ viewport: { width: 1280, height: 820 } })).newPage();
        const violations: string[] = [];
        tab.on("console", (m) => {
          if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
        });

        // the session page: who asks, the instructions, the button and the QR code, then the answer
        const s = await c.post("/api/v1/sessions", { channel: "whatsapp" });
        const res = await tab.goto(stack.url + pageOf(s.body.session_url).path);
        expect(res!.headers()["content-security-policy"]).toMatch(/^default-src 'none'; script-src 'self';/);
        await tab.getByRole("heading", { level: 1, name: "Confirm your phone number" }).waitFor();
        await expect.poll(() => tab.locator("#branding").textContent()).toBe("Acme Shop asks you to confirm");
        expect(await tab.getByRole("link", { name: "Open WhatsApp" }).getAttribute("href")).toBe(s.body.deep_link);
        expect(await tab.getByRole("img").getAttribute("src")).toMatch(/^data:image\/png;base64,/);
        expect(await tab.locator("#progress").textContent()).toBe("Waiting for your message…");
        await shot(tab, "session-page", 1280);
        await shot(tab, "session-page", 390);
        expect((await c.post(`/api/v1/sessions/${s.body.id}/test-verify`)).status).toBe(200);
        await expect.poll(() => tab.locator("#progress").textContent(), { timeout: 10_000 }).toBe("Confirmed.");
        expect(await tab.getByRole("link").count()).toBe(0);

        // the request page of a project without branding: the tenant's name says who is asking
        const r = await c.post("/api/v1/verification-requests", {
          assets: [{ type: "email" }, { type: "phone", identifier: "+37069100078", channel: "whatsapp" }],
          action_context: { title: "Confirm your order", description: "Order 42 needs your email and phone." },
        });
        const u = new URL(r.body.verification_url);
        await tab.setViewportSize({ width: 1280, height: 820 });
        await tab.goto(`${stack.url}${u.pathname}${u.hash}`);
        await tab.getByRole("heading", { level: 1, name: "Confirm your order" }).waitFor();
        await expect.poll(() => tab.locator("#branding").textContent()).toBe("Acme Shop");
        await shot(tab, "hosted-request-page", 1280);
        await shot(tab, "hosted-request-page", 390);
        expect(violations).toEqual([]);
      } finally {
        await browser.close();
      }
    });
  },
);
