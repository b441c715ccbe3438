// The API reference (/docs) in Debian's Chromium (playwright-core) through the real stack: Scalar's
// kept renderer loads from this origin alone (no request to another origin, no CSP violation, no
// page error), search finds an operation and its example shows, and try-it calls this server with a
// test key, while a live key typed into it never leaves the browser.
import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";

const CHROMIUM = "/usr/bin/chromium";

const stack = useStack();
const t = useTenant(stack, "Docs reader");

type Page = import("playwright-core").Page;

/** The sidebar's search field, which opens the search dialog. */
const searchBox = (tab: Page) =>
  tab
    .getByRole("button", { name: /search/i })
    .or(tab.getByText("Search", { exact: true }))
    .first();

/** A tab on /docs that records what leaves it and what the browser complains about. */
async function openDocs(browser: import("playwright-core").Browser) {
  const tab = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const origin = new URL(stack.url).origin;
  const elsewhere: string[] = [];
  const complaints: string[] = [];
  const sent: { url: string; headers: Record<string, string> }[] = [];
  tab.on("request", async (r) => {
    const url = r.url();
    if (!url.startsWith(origin) && !url.startsWith("data:") && !url.startsWith("blob:")) elsewhere.push(url);
    else if (new URL(url).pathname.startsWith("/api/v1/")) sent.push({ url, headers: await r.allHeaders() });
  });
  tab.on("console", (m) => {
    if (m.type() === "error" || /Content Security Policy|\beval\b/i.test(m.text())) complaints.push(m.text());
  });
  tab.on("pageerror", (e) => complaints.push(`page error: ${e.message}`));
  await tab.goto(`${origin}/docs`);
  await searchBox(tab).waitFor({ timeout: 30_000 });
  return { tab, elsewhere, complaints, sent };
}

/** The section of the operation whose heading is `summary`. */
const operation = (tab: Page, summary: string) => tab.locator("section", { has: tab.getByRole("heading", { name: summary }) }).first();

/** Opens the try-it client of an operation, puts `key` in its bearer field and sends. */
async function tryIt(tab: Page, summary: string, key: string) {
  await operation(tab, summary)
    .getByRole("button", { name: /test request/i })
    .first()
    .click();
  const dialog = tab.getByRole("dialog");
  await dialog.waitFor();
  const field = dialog.getByPlaceholder(/token/i).first();
  await field.fill(key);
  await dialog.getByRole("button", { name: /^send/i }).first().click();
}

describe.skipIf(!existsSync(CHROMIUM))(`/docs in Chromium${existsSync(CHROMIUM) ? "" : " (skipped: /usr/bin/chromium is absent; .ci/run installs it)"}`, () => {
  it("renders from this origin, finds an operation by search and shows its example; try-it sends a test key and never a live one", {
    timeout: 180_000,
  }, async () => {
    const doc = (await api(stack.url).get("/api/openapi.json")).body;
    const revoke = doc.paths["/api/v1/proofs/{id}/revoke"].post;
    const { chromium } = await import("playwright-core");
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
    try {
      const { tab, elsewhere, complaints, sent } = await openDocs(browser);

      // search: the operation by words of its summary, then its section with its example
      await searchBox(tab).click();
      await tab.keyboard.type("Revoke a proof");
      const hit = tab.getByRole("option").filter({ hasText: "/api/v1/proofs/{id}/revoke" });
      await hit.first().click();
      await expect.poll(() => tab.url()).toMatch(/#tag\/proofs\/POST\/api\/v1\/proofs\/\{?id\}?\/revoke/i);
      const section = operation(tab, revoke.summary);
      await section.waitFor();
      const example = revoke.responses["200"].content["application/json"].example;
      for (const key of Object.keys(example)) await expect.poll(() => section.textContent()).toContain(`"${key}"`);

      // try-it against this server: the list of verifications with the tenant's test key shows its verification
      // (the list's query comes filled from the document's examples: a pending phone verification)
      const made = await api(stack.url, t.testKey).post("/api/v1/verifications", { type: "phone", channel: "sms", identifier: "+14155550123" });
      expect(made.status).toBe(201);
      const mine: string = made.body.id;
      await tab.goto(`${new URL(stack.url).origin}/docs#tag/verifications/GET/api/v1/verifications`);
      const list = doc.paths["/api/v1/verifications"].get.summary;
      await operation(tab, list).waitFor();
      await tryIt(tab, list, t.testKey);
      await expect.poll(() => sent.length, { timeout: 15_000 }).toBe(1);
      expect(sent[0].headers.authorization).toBe(`Bearer ${t.testKey}`);
      await expect.poll(() => tab.getByRole("dialog").textContent()).toMatch(/200\s*OK/);
      await expect.poll(() => tab.getByRole("dialog").textContent()).toContain(mine);

      // a live key typed into try-it is removed before the request leaves: the server answers 401
      await tab.keyboard.press("Escape");
      await tryIt(tab, list, t.liveKey);
      await expect.poll(() => sent.length, { timeout: 15_000 }).toBe(2);
      expect(sent[1].headers.authorization).toBeUndefined();
      expect(JSON.stringify(sent)).not.toContain(t.liveKey);
      await expect.poll(() => tab.getByRole("dialog").textContent()).toMatch(/401\s*Unauthorized/);

      expect(elsewhere, "requests to another origin").toEqual([]);
      // the browser reports the refused call it was asked to make, and nothing else
      expect(complaints, "console errors, CSP violations").toEqual(["Failed to load resource: the server responded with a status of 401 (Unauthorized)"]);
    } finally {
      await browser.close();
    }
  });

  it("serves the renderer from this origin, cached for a year, and the page's CSP allows scripts of this origin only", async () => {
    const page = await api(stack.url).get("/docs");
    const csp = page.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("script-src 'self';");
    expect(csp).toContain("connect-src 'self';");
    expect(csp).not.toMatch(/unsafe-eval|https?:/);
    const scripts = [...page.text.matchAll(/<script src="([^"]+)"><\/script>/g)].map((m) => m[1]);
    expect(scripts).toEqual([
      expect.stringMatching(/^\/docs\/assets\/scalar\.[0-9a-f]{16}\.js$/),
      expect.stringMatching(/^\/docs\/assets\/docs\.[0-9a-f]{16}\.js$/),
    ]);
    expect(page.text).not.toMatch(/<script>|<script [^s]/);
    for (const src of scripts) {
      const r = await fetch(`${stack.url}${src}`);
      expect(r.status).toBe(200);
      expect(r.headers.get("content-type")).toMatch(/^text\/javascript/);
      expect(r.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(r.headers.get("content-encoding")).toBe("gzip"); // fetch asks for it, and reads it decoded
      const body = Buffer.from(await r.arrayBuffer());
      expect(body.byteLength).toBeGreaterThan(500);
      const plain = await fetch(`${stack.url}${src}`, { headers: { "accept-encoding": "identity" } });
      expect(plain.headers.get("content-encoding")).toBeNull();
      expect(Buffer.from(await plain.arrayBuffer()).equals(body)).toBe(true);
    }
    expect((await fetch(`${stack.url}/docs/assets/scalar.0000000000000000.js`)).status).toBe(404);
  });
});
