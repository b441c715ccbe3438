// A domain asset on the hosted page: its API shows the record to publish and what the last check
// saw, "check now" runs the check (5 s limit), auto is not offered (the page takes no API
// tokens); in Chromium the card shows the record and, after "Check now", the last check, under
// the page's strict CSP.
import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";
import { expectError } from "../support/expect-error.ts";

const CHROMIUM = "/usr/bin/chromium";
const stack = useStack();
const t = useTenant(stack, "Hosted domains");

let n = 0;
async function request(asset: Record<string, unknown>) {
  const r = await api(stack.url, t.testKey).post("/api/v1/verification-requests", { assets: [{ type: "domain", ...asset }] });
  expect(r.status, r.text).toBe(201);
  const url = new URL(r.body.verification_url);
  return { id: r.body.id as string, token: url.hash.slice(1), path: url.pathname + url.hash };
}
const page = (id: string, token: string) => {
  const p = `/api/v1/verify/request/${id}`;
  const h = { "x-request-token": token };
  return {
    get: () => api(stack.url).get(p, h),
    start: (body: Record<string, unknown>) => api(stack.url).post(`${p}/assets/0/start`, body, h),
    check: () => api(stack.url).post(`${p}/assets/0/check`, undefined, h),
  };
};

describe("the page's API", () => {
  it("shows the record of an open domain asset and runs its check once per 5 s", async () => {
    const r = await request({ identifier: `page${n++}.example.com`, channel: "dns" });
    const view = (await page(r.id, r.token).get()).body.assets[0];
    expect(view.available_channels).toEqual(["dns"]);
    expect(view.domain.dns_record).toEqual({
      type: "TXT",
      name: `_icv-challenge.${view.identifier}`,
      value: expect.stringMatching(/^icv-verify=/),
    });
    expect(view.domain.check_count).toBe(0);
    expect(view.domain.last_check).toBeUndefined();

    const checked = await page(r.id, r.token).check();
    expect(checked.status, checked.text).toBe(200);
    expect(checked.body.assets[0].domain).toMatchObject({ check_count: 1, last_check: { passed: false } });
    expectError(await page(r.id, r.token).check(), 429, "rate_limited");
    expectError(await page(r.id, "not-the-token").check(), 404, "not_found");
  });

  it("a user picks the HTTP file on the page and sees it; auto cannot be started there", async () => {
    const r = await request({ identifier: `page${n++}.example.com`, allowed_channels: ["dns", "http", "auto"] });
    expect((await page(r.id, r.token).get()).body.assets[0].available_channels).toEqual(["dns", "http"]);
    const started = await page(r.id, r.token).start({ channel: "http" });
    expect(started.status, started.text).toBe(200);
    expect(started.body.assets[0].domain.http_file).toEqual({
      path: "/.well-known/icv-verify.txt",
      content: expect.stringMatching(/^icv-verify=/),
    });
    expectError(await page(r.id, r.token).start({ channel: "auto" }), 400, "validation_error");
  });
});

describe.skipIf(!existsSync(CHROMIUM))(`the page in Chromium${existsSync(CHROMIUM) ? "" : " (skipped: /usr/bin/chromium is absent)"}`, () => {
  it("shows the TXT record to publish and, after Check now, what the check saw", { timeout: 60_000 }, async () => {
    const { chromium } = await import("playwright-core");
    const r = await request({ identifier: `chromium${n++}.example.com`, channel: "dns" });
    const record = (await page(r.id, r.token).get()).body.assets[0].domain.dns_record;
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
      const violations: string[] = [];
      tab.on("console", (m) => {
        if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
      });
      const res = await tab.goto(stack.url + r.path);
      expect(res!.headers()["content-security-policy"]).toMatch(/^default-src 'none'; script-src 'self';/);
      const card = tab.locator("#asset-0");
      await card.getByRole("button", { name: "Check now" }).waitFor();
      const values = await card.locator(".domain-fields dd").allTextContents();
      expect(values).toEqual(["TXT", record.name, record.value]);
      await card.getByRole("button", { name: "Check now" }).click();
      await expect.poll(() => card.locator(".last-check").textContent(), { timeout: 10_000 }).toMatch(/Test mode/);
      expect(await card.locator(".last-check").textContent()).toMatch(/1 check\b/);
      expect(violations).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
