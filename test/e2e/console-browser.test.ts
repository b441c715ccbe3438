// The tenant console in Debian's Chromium (playwright-core) through the real stack, with the
// browser's own virtual authenticator (CDP WebAuthn): an operator's invite, a passkey registered
// from it, a verification made through the API seen and its proof revoked, a key created and
// revoked (refused at once), a viewer who can change nothing, sign-out and sign-in again; the
// CSP (no violation), the cookie's flags, hashed long-cached assets, and 390 px wide. It leaves
// the docs' screenshots (docs/console-*.png) when they are absent, and fresh ones in test-artifacts/.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { beforeAll, describe, expect, it } from "vitest";
import { adminCli } from "../support/admin-cli.ts";
import { freePort } from "../support/private-servers.ts";
import { startReceiver } from "../support/receiver.ts";
import { api } from "../support/stack.ts";
import { useStack } from "../support/use-stack.ts";

const CHROMIUM = "/usr/bin/chromium";
const ARTIFACTS = "test-artifacts";

// WebAuthn binds a passkey to the origin: the page's origin must be PUBLIC_BASE_URL, so the port is chosen first
let port = 0;
beforeAll(async () => {
  port = await freePort();
});
const stack = useStack(() => ({
  PORT: String(port),
  PUBLIC_BASE_URL: `http://localhost:${port}`,
  ALLOW_PRIVATE_TARGETS: "true",
  WEBHOOK_RETRY_DELAYS_MS: "200,200",
}));

const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
/** axe-core's serious and critical violations on the page as it stands (run through the DevTools protocol: the page's CSP is untouched). */
async function axe(tab: import("playwright-core").Page, where: string) {
  const found = (await tab.evaluate(
    `${AXE};axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => v.id + ": " + v.nodes.map((n) => n.target.join(" ")).join(", ")))`,
  )) as string[];
  expect(found, where).toEqual([]);
}

async function shot(tab: import("playwright-core").Page, name: string) {
  mkdirSync(ARTIFACTS, { recursive: true });
  const png = await tab.screenshot({ path: `${ARTIFACTS}/console-${name}.png`, fullPage: true });
  // docs/ keeps its committed copy (delete it to retake it)
  if (!existsSync(`docs/console-${name}.png`)) writeFileSync(`docs/console-${name}.png`, png);
}

describe.skipIf(!existsSync(CHROMIUM))(
  `the console in Chromium${existsSync(CHROMIUM) ? "" : " (skipped: /usr/bin/chromium is absent; .ci/run installs it)"}`,
  () => {
    it("invite → passkey → a verification made through the API → revoke its proof → a key created and revoked → a viewer changes nothing → sign out and in", {
      timeout: 180_000,
    }, async () => {
      const { chromium } = await import("playwright-core");
      const base = `http://localhost:${port}`;
      const t = await stack.tenant("Console Co");
      const invite = await adminCli(stack, "console-user", "invite", "--tenant", t.tenantId, "--email", "ada@console.example", "--role", "admin");
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
        /** A browser profile with its own virtual authenticator (a platform passkey store that always consents). */
        const profile = async () => {
          const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
          const tab = await context.newPage();
          const cdp = await context.newCDPSession(tab);
          await cdp.send("WebAuthn.enable");
          await cdp.send("WebAuthn.addVirtualAuthenticator", {
            options: {
              protocol: "ctap2",
              transport: "internal",
              hasResidentKey: true,
              hasUserVerification: true,
              isUserVerified: true,
              automaticPresenceSimulation: true,
            },
          });
          const violations: string[] = [];
          tab.on("console", (m) => {
            if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
          });
          return { context, tab, violations };
        };

        const { context, tab, violations } = await profile();
        const page = await tab.goto(invite.invite_url);
        const csp = page!.headers()["content-security-policy"];
        expect(csp).toContain("script-src 'self'");
        expect(csp).not.toContain("unsafe-inline");
        expect(page!.headers()["cache-control"]).toBe("no-store");
        await axe(tab, "invite");
        await tab.getByRole("button", { name: "Register a passkey" }).click();
        await tab.getByRole("heading", { name: "Verifications" }).waitFor();
        const [cookie] = (await context.cookies()).filter((c) => c.name === "icv_console");
        expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/console" });
        // the assets: hashed names, cached for a year
        const asset = await tab.evaluate(() => (document.querySelector("script[type=module]") as HTMLScriptElement).src);
        expect(asset).toMatch(/\/console\/assets\/console\.[0-9a-f]{16}\.js$/);
        expect((await fetch(asset.replace("localhost", "127.0.0.1"))).headers.get("cache-control")).toBe("public, max-age=31536000, immutable");

        // a verification made through the API, seen in the console and its proof revoked there
        const c = api(stack.url, t.testKey);
        const v = await c.post("/api/v1/verifications", { type: "email", channel: "email", identifier: "jo@example.com", external_user_id: "user-42" });
        expect((await c.post(`/api/v1/verifications/${v.body.id}/test-verify`)).status).toBe(200);
        await tab.reload();
        await tab.getByRole("link", { name: v.body.id }).waitFor();
        await shot(tab, "verifications");
        await axe(tab, "verifications");
        await tab.getByRole("link", { name: v.body.id }).click();
        await tab.getByRole("heading", { name: `Verification ${v.body.id}` }).waitFor();
        await tab.getByLabel("Reason").selectOption("fraud");
        await shot(tab, "verification");
        await axe(tab, "verification");
        await tab.getByRole("button", { name: "Revoke proof" }).click();
        await tab.locator('dd[data-field="Status"]', { hasText: "revoked" }).waitFor();
        // its timeline: made, verified, revoked
        await tab.locator("ol.timeline li", { hasText: "verified → revoked" }).waitFor();
        expect(await tab.locator("ol.timeline li").first().textContent()).toContain("pending");
        expect((await c.get(`/api/v1/proofs/${v.body.id}/status`)).body).toMatchObject({ is_revoked: true, revoked_reason: "fraud" });

        // the overview counts it: one revoked in the last 24 hours, nothing else
        await tab.getByRole("link", { name: "Overview" }).click();
        const day = tab.getByRole("row", { name: /Last 24 hours/ });
        await day.waitFor();
        expect(await day.getByRole("cell").allTextContents()).toEqual(["0", "0", "0", "0", "0", "1", "100.0 %"]);
        await shot(tab, "overview");
        await axe(tab, "overview");

        // requests made through the API, and the test messages inbox (the code mailed to jo@example.com)
        const vr = await c.post("/api/v1/verification-requests", { assets: [{ type: "email" }], reference_id: "order-7" });
        expect(vr.status, vr.text).toBe(201);
        await tab.getByRole("link", { name: "Requests" }).click();
        await tab.getByRole("cell", { name: vr.body.id }).waitFor();
        expect(
          await tab
            .getByRole("row", { name: new RegExp(vr.body.id) })
            .getByRole("link", { name: "open" })
            .getAttribute("href"),
        ).toBe(vr.body.verification_url);
        await axe(tab, "requests");
        await tab.getByRole("link", { name: "Test messages" }).click();
        await tab.getByRole("cell", { name: "jo@example.com" }).first().waitFor();
        await axe(tab, "test messages");

        // a template edited with its preview, then saved (the API sees it)
        const prj = await c.post("/api/v1/me/projects", { name: "Shop" });
        expect(prj.status, prj.text).toBe(201);
        await tab.getByRole("link", { name: "Projects", exact: true }).click();
        await tab.getByRole("link", { name: "Shop" }).click();
        await tab.getByText("The built-in text").waitFor();
        await tab.getByLabel("Template text").fill("Shop code {{code}}, valid {{expires_in}}");
        await tab.getByRole("button", { name: "Preview" }).click();
        // the preview shows the built-in text until the rendered template comes back
        await expect.poll(() => tab.locator("pre[data-preview]").textContent()).toBe("Shop code A1B2C3, valid 10 minutes");
        await axe(tab, "templates");
        await tab.getByRole("button", { name: "Save" }).click();
        await tab.getByText("Saved.").waitFor();
        expect((await c.get(`/api/v1/me/projects/${prj.body.id}/templates/email/verification_request`)).body).toMatchObject({
          body: "Shop code {{code}}, valid {{expires_in}}",
          custom: true,
        });

        // a key: created (shown once), works, revoked, refused at once
        await tab.getByRole("link", { name: "API keys" }).click();
        await tab.getByRole("button", { name: "Create a key" }).click();
        const key = (await tab.locator("code[data-key]").textContent())!;
        expect(key).toMatch(/^pk_test_/);
        expect((await api(stack.url, key).get("/api/v1/verifications")).status).toBe(200);
        await shot(tab, "keys");
        await axe(tab, "keys");
        await tab.getByRole("button", { name: `Revoke ${key.slice(0, 12)}` }).click();
        await tab.getByRole("button", { name: `Revoke ${key.slice(0, 12)}` }).waitFor({ state: "detached" });
        expect((await api(stack.url, key).get("/api/v1/verifications")).status).toBe(401);

        // the webhook endpoint: set to a local receiver that fails, the delivery fails, is retried from the console and arrives
        const receiver = await startReceiver(200);
        try {
          await tab.getByRole("link", { name: "Webhook" }).click();
          await tab.getByLabel("Endpoint URL").fill(receiver.url);
          await tab.getByRole("button", { name: "Save" }).click();
          await tab.locator('dd[data-field="URL"]', { hasText: receiver.url }).waitFor();
          await tab.getByRole("button", { name: "Send a test event" }).click();
          await tab.getByText(/^Test event sent: delivery whd_/).waitFor();
          const [test] = await receiver.waitFor(1, 30_000);
          expect(JSON.parse(test.body)).toMatchObject({ event: "webhook.test", test: true });
          expect(String(test.headers["webhook-signature"])).toMatch(/^v1,/);
          receiver.answer(500);
          await tab.getByRole("button", { name: "Rotate the secret" }).click();
          expect(await tab.locator("code[data-secret]").textContent()).toMatch(/^whsec_/);
          await axe(tab, "webhook");
          const x = await c.post("/api/v1/verifications", { type: "email", channel: "email", identifier: "hook@example.com" });
          await c.post(`/api/v1/verifications/${x.body.id}/test-verify`);
          let failed: { id: string } | undefined;
          for (let i = 0; i < 150 && !failed; i++) {
            failed = (await c.get("/api/v1/webhook-deliveries?status=failed")).body.data[0];
            if (!failed) await new Promise((r) => setTimeout(r, 200));
          }
          expect(failed, "a failed delivery").toBeDefined();
          const before = receiver.requests.length;
          receiver.answer(200);
          await tab.getByRole("link", { name: "Deliveries" }).click();
          await tab.getByLabel("Status").selectOption("failed");
          await tab.getByRole("button", { name: "Filter" }).click();
          await shot(tab, "deliveries");
          await axe(tab, "deliveries");
          await tab.getByRole("button", { name: `Retry ${failed!.id}` }).click();
          await receiver.waitFor(before + 1, 30_000);
          for (let i = 0; i < 100 && (await c.get(`/api/v1/webhook-deliveries/${failed!.id}`)).body.status !== "delivered"; i++)
            await new Promise((r) => setTimeout(r, 200));
          expect((await c.get(`/api/v1/webhook-deliveries/${failed!.id}`)).body.status).toBe("delivered");
        } finally {
          await receiver.close();
        }

        // the live/test switch is always there; live has none of the test data
        await tab.getByRole("link", { name: "API keys" }).click();
        await tab.getByRole("link", { name: "Live", exact: true }).click();
        await tab.getByRole("heading", { name: "API keys (live)" }).waitFor();
        expect(await tab.getByRole("button", { name: `Revoke ${key.slice(0, 12)}` }).count()).toBe(0);

        // 390 px wide: nothing scrolls sideways
        await tab.setViewportSize({ width: 390, height: 800 });
        await tab.getByRole("link", { name: "Verifications" }).click();
        await tab.getByRole("heading", { name: "Verifications" }).waitFor();
        expect(await tab.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);

        // a viewer, invited from the console, sees the verification and can change nothing
        await tab.setViewportSize({ width: 1280, height: 900 });
        await tab.getByRole("link", { name: "Users" }).click();
        await tab.getByLabel("Email").fill("vic@console.example");
        await tab.getByRole("button", { name: "Invite" }).click();
        const viewerLink = (await tab.locator(".once code").textContent())!;
        await axe(tab, "users");
        const w = await c.post("/api/v1/verifications", { type: "email", channel: "email", identifier: "kim@example.com" });
        await c.post(`/api/v1/verifications/${w.body.id}/test-verify`);
        const viewer = await profile();
        await viewer.tab.goto(viewerLink);
        await viewer.tab.getByRole("button", { name: "Register a passkey" }).click();
        await viewer.tab.getByRole("heading", { name: "Verifications" }).waitFor();
        await viewer.tab.goto(`${base}/console/test/verifications/${w.body.id}`);
        await viewer.tab.locator('dd[data-field="Status"]', { hasText: "verified" }).waitFor();
        expect(await viewer.tab.getByRole("button", { name: "Revoke proof" }).count()).toBe(0);
        expect(await viewer.tab.getByRole("link", { name: "API keys" }).count()).toBe(0);
        const forced = await viewer.tab.evaluate(async (id) => {
          const me = await (await fetch("/console/api/me")).json();
          const r = await fetch(`/console/api/test/proofs/${id}/revoke`, { method: "POST", headers: { "x-csrf-token": me.csrf_token } });
          return { status: r.status, body: await r.json() };
        }, w.body.id);
        expect(forced).toMatchObject({ status: 403, body: { error: { code: "forbidden" } } });
        expect((await c.get(`/api/v1/verifications/${w.body.id}`)).body.status).toBe("verified");
        // a change without the CSRF token is refused even for the admin's own page
        const noCsrf = await tab.evaluate(async (id) => (await fetch(`/console/api/test/proofs/${id}/revoke`, { method: "POST" })).status, w.body.id);
        expect(noCsrf).toBe(403);

        // the audit log shows both
        await tab.getByRole("link", { name: "Audit log" }).click();
        await tab.getByRole("cell", { name: "denied" }).first().waitFor();
        await axe(tab, "audit log");

        // sign out, then in again with the passkey
        await tab.getByRole("button", { name: "Sign out" }).click();
        await axe(tab, "sign-in");
        await tab.getByRole("button", { name: "Sign in with a passkey" }).click();
        await tab.getByRole("heading", { name: "Verifications" }).waitFor();
        expect(violations).toEqual([]);
        expect(viewer.violations).toEqual([]);
      } finally {
        await browser.close();
      }
    });
  },
);
