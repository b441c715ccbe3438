// A project's branding on the hosted page: the page API carries it, the logo comes through the
// gateway's same-origin logo proxy (fetched over real HTTPS from the tenant's server, images
// only), the page shows name, logo, colour and support address in a real Chromium under the
// page's strict CSP, and the project's callbacks are where the page sends the user. Writes the
// docs screenshot docs/hosted-page-branding.png when it is absent.
import { existsSync } from "node:fs";
import https from "node:https";
import tls from "node:tls";
import type { AddressInfo } from "node:net";
import QRCode from "qrcode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCa, issueCertificate } from "@icv/platform";
import { api, startStack, type Stack } from "../support/stack.ts";

const CHROMIUM = "/usr/bin/chromium";
let stack: Stack;
let c: ReturnType<typeof api>;
let logoPng: Buffer;
let logoBase = "";
const logoHits: string[] = [];

// the tenant's CDN, over HTTPS with a certificate of a CA this test process trusts
let cdn: https.Server;

beforeAll(async () => {
  const ca = await createCa("Test CDN CA");
  const leaf = await issueCertificate(ca, "localhost");
  // Node ≥ 22.19 / 24.5: the project's own Node (test/node-runtime.test.ts)
  tls.setDefaultCACertificates([...tls.getCACertificates("default"), ca.cert]);
  logoPng = await QRCode.toBuffer("ACME", { type: "png", width: 96, margin: 1, color: { dark: "#0a7f5a", light: "#ffffff" } });
  cdn = https.createServer({ cert: leaf.cert, key: leaf.key }, (req, res) => {
    logoHits.push(req.url ?? "");
    if (req.url === "/logo.png") return void res.writeHead(200, { "content-type": "image/png" }).end(logoPng);
    if (req.url === "/logo.svg")
      return void res.writeHead(200, { "content-type": "image/svg+xml" }).end("<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>");
    if (req.url === "/page.html") return void res.writeHead(200, { "content-type": "text/html" }).end("<h1>not an image</h1>");
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => cdn.listen(0, "127.0.0.1", r));
  logoBase = `https://localhost:${(cdn.address() as AddressInfo).port}`;
  stack = await startStack({ ALLOW_PRIVATE_TARGETS: "true" });
  c = api(stack.url, (await stack.tenant("Branded page")).testKey);
});
afterAll(async () => {
  await stack?.close();
  cdn?.close();
});

async function project(branding: Record<string, string>, callbacks: Record<string, string> = {}) {
  const r = await c.post("/api/v1/me/projects", { name: "Page", branding, callbacks });
  expect(r.status, r.text).toBe(201);
  return r.body.id as string;
}
async function request(body: Record<string, unknown>) {
  const r = await c.post("/api/v1/verification-requests", body);
  expect(r.status, r.text).toBe(201);
  const url = new URL(r.body.verification_url);
  return { id: r.body.id as string, token: url.hash.slice(1), path: url.pathname + url.hash };
}
const view = async (r: { id: string; token: string }) => (await api(stack.url).get(`/api/v1/verify/request/${r.id}`, { "x-request-token": r.token })).body;

describe("branding in the page API and the logo proxy", () => {
  it("carries the project's branding, its logo behind the same-origin proxy", async () => {
    const pid = await project({
      business_name: "Acme Shop",
      logo_url: `${logoBase}/logo.png`,
      primary_color: "#0a7f5a",
      support_email: "help@acme.example",
    });
    const r = await request({ project_id: pid, assets: [{ type: "email" }] });
    expect((await view(r)).branding).toEqual({
      business_name: "Acme Shop",
      logo_url: `/hosted/logo/${pid}`,
      primary_color: "#0a7f5a",
      support_email: "help@acme.example",
    });
    const logo = await fetch(`${stack.url}/hosted/logo/${pid}`);
    expect(logo.status).toBe(200);
    expect(logo.headers.get("content-type")).toBe("image/png");
    expect(logo.headers.get("x-content-type-options")).toBe("nosniff");
    expect(Buffer.from(await logo.arrayBuffer()).equals(logoPng)).toBe(true);
    // cached: a second load does not reach the tenant's server again
    const hits = logoHits.length;
    expect((await fetch(`${stack.url}/hosted/logo/${pid}`)).status).toBe(200);
    expect(logoHits.length).toBe(hits);
  });

  it("serves no SVG, no HTML, nothing for an unknown project or one without a logo", async () => {
    for (const file of ["logo.svg", "page.html", "missing.png"]) {
      const pid = await project({ logo_url: `${logoBase}/${file}` });
      expect((await fetch(`${stack.url}/hosted/logo/${pid}`)).status, file).toBe(404);
    }
    expect((await fetch(`${stack.url}/hosted/logo/${await project({ business_name: "No logo" })}`)).status).toBe(404);
    expect((await fetch(`${stack.url}/hosted/logo/prj_01HZZZZZZZZZZZZZZZZZZZZZZZ`)).status).toBe(404);
    expect((await fetch(`${stack.url}/hosted/logo/..%2f..%2fetc%2fpasswd`)).status).toBe(404);
  });

  it("a request without project_id shows the default project (no branding set: the tenant's name); callbacks send a cancelled request to cancel_url", async () => {
    const plain = await request({ assets: [{ type: "email" }] });
    expect((await view(plain)).branding).toEqual({ business_name: "Branded page", logo_url: null, primary_color: null, support_email: null });
    const pid = await project(
      {},
      { success_url: "https://shop.example/ok", cancel_url: "https://shop.example/cancelled", failure_url: "https://shop.example/failed" },
    );
    const r = await request({ project_id: pid, assets: [{ type: "email" }] });
    expect((await c.del(`/api/v1/verification-requests/${r.id}`)).status).toBe(200);
    const v = await view(r);
    expect(v.has_redirect).toBe(true);
    expect(v.redirect_to).toBe(`https://shop.example/cancelled?request_id=${r.id}&status=cancelled`);
    // a redirect_url of the request's own wins over the project's callbacks
    const own = await request({ project_id: pid, assets: [{ type: "email" }], redirect_url: "https://shop.example/mine" });
    await c.del(`/api/v1/verification-requests/${own.id}`);
    expect((await view(own)).redirect_to).toBe(`https://shop.example/mine?request_id=${own.id}&status=cancelled`);
  });
});

describe.skipIf(!existsSync(CHROMIUM))(`the branded page in Chromium${existsSync(CHROMIUM) ? "" : " (skipped: /usr/bin/chromium is absent)"}`, () => {
  it("shows the business name, logo, colour and support address under the strict CSP; writes the docs screenshot", {
    timeout: 90_000,
  }, async () => {
    const { chromium } = await import("playwright-core");
    const pid = await project({
      business_name: "Acme <Shop>",
      logo_url: `${logoBase}/logo.png`,
      primary_color: "#0a7f5a",
      support_email: "help@acme.example",
    });
    const r = await request({
      project_id: pid,
      assets: [{ type: "email" }, { type: "phone", identifier: "+37069300001", channel: "telegram" }],
      action_context: { title: "Confirm your order", description: "Order 42 needs your email and phone." },
    });
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
      const tab = await browser.newPage({ viewport: { width: 720, height: 900 } });
      const origins = new Set<string>();
      tab.on("request", (q) => {
        if (!q.url().startsWith("data:")) origins.add(new URL(q.url()).origin);
      });
      const violations: string[] = [];
      tab.on("console", (m) => {
        if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
      });
      const res = await tab.goto(stack.url + r.path);
      expect(res!.headers()["content-security-policy"]).toBe(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
      );
      await tab.getByRole("heading", { level: 1, name: "Confirm your order" }).waitFor();
      // the name is text, never markup
      await expect.poll(() => tab.locator(".brand-name").textContent()).toBe("Acme <Shop>");
      const logo = tab.getByRole("img", { name: "Acme <Shop> logo" });
      expect(await logo.getAttribute("src")).toBe(`/hosted/logo/${pid}`);
      await expect.poll(() => logo.evaluate((i: HTMLImageElement) => i.complete && i.naturalWidth)).toBeGreaterThan(0);
      // the project's colour is the page's accent (buttons), set through the CSSOM
      const button = tab.locator("#asset-0").getByRole("button", { name: "Start" });
      expect(await button.evaluate((b) => getComputedStyle(b).backgroundColor)).toBe("rgb(10, 127, 90)");
      expect(await tab.getByRole("link", { name: "help@acme.example" }).getAttribute("href")).toBe("mailto:help@acme.example");
      expect(violations).toEqual([]);
      expect([...origins]).toEqual([new URL(stack.url).origin]);
      // the docs screenshot, taken when absent (delete it to retake it)
      if (!existsSync("docs/hosted-page-branding.png")) await tab.screenshot({ path: "docs/hosted-page-branding.png", fullPage: true });
    } finally {
      await browser.close();
    }
  });
});
