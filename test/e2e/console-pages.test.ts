// The console's overview charts, search by identifier, proof validation, projects with branding
// (live preview), profiles and retention, in Debian's Chromium through the real stack (as console-browser.test.ts):
// the counts grouped by the verification service, Chart.js drawn under the strict CSP, the
// identifier searched in full but shown masked and never put in a URL, another tenant's and the
// live environment's data never found, a viewer who may search and validate but change nothing,
// and axe on every new page. It leaves docs/console-overview.png when absent, and fresh shots in test-artifacts/.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { beforeAll, describe, expect, it } from "vitest";
import { adminCli } from "../support/admin-cli.ts";
import { freePort } from "../support/private-servers.ts";
import { api } from "../support/stack.ts";
import { useStack } from "../support/use-stack.ts";

const CHROMIUM = "/usr/bin/chromium";
const ARTIFACTS = "test-artifacts";

let port = 0;
beforeAll(async () => {
  port = await freePort();
});
const stack = useStack(() => ({ PORT: String(port), PUBLIC_BASE_URL: `http://localhost:${port}` }));

type Tab = import("playwright-core").Page;
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
async function axe(tab: Tab, where: string) {
  const found = (await tab.evaluate(
    `${AXE};axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => v.id + ": " + v.nodes.map((n) => n.target.join(" ")).join(", ")))`,
  )) as string[];
  expect(found, where).toEqual([]);
}
async function shot(tab: Tab, name: string) {
  mkdirSync(ARTIFACTS, { recursive: true });
  const png = await tab.screenshot({ path: `${ARTIFACTS}/console-${name}.png`, fullPage: true });
  if (!existsSync(`docs/console-${name}.png`)) writeFileSync(`docs/console-${name}.png`, png);
}

describe.skipIf(!existsSync(CHROMIUM))(
  `the console's overview, search, validation, branding, profiles and retention in Chromium${existsSync(CHROMIUM) ? "" : " (skipped: /usr/bin/chromium is absent; .ci/run installs it)"}`,
  () => {
    it("charts and counts → find by identifier (masked, kept apart) → validate → branding with its preview → profiles → retention → a viewer changes nothing", {
      timeout: 180_000,
    }, async () => {
      const { chromium } = await import("playwright-core");
      const base = `http://localhost:${port}`;
      const t = await stack.tenant("Pages Co");
      const other = await stack.tenant("Other Co");
      const c = api(stack.url, t.testKey);
      // this tenant (test): jo@example.com verified, a phone left pending; the same email in another tenant, a wallet in live
      const jo = await c.post("/api/v1/verifications", { type: "email", channel: "email", identifier: "jo@example.com", external_user_id: "user-7" });
      expect((await c.post(`/api/v1/verifications/${jo.body.id}/test-verify`)).status).toBe(200);
      expect((await c.post("/api/v1/verifications", { type: "phone", channel: "sms", identifier: "+37069199199" })).status).toBe(201);
      const elsewhere = await api(stack.url, other.testKey).post("/api/v1/verifications", { type: "email", channel: "email", identifier: "jo@example.com" });
      expect(elsewhere.status).toBe(201);
      // live (no provider is set up here): a wallet, which needs none
      const WALLET = "0x52908400098527886E0F7030069857D2E4169EE7";
      const live = await api(stack.url, t.liveKey).post("/api/v1/verifications", { type: "wallet", channel: "ethereum", identifier: WALLET });
      expect(live.status, live.text).toBe(201);

      const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"] });
      try {
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
          const urls: string[] = [];
          tab.on("console", (m) => {
            if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
          });
          tab.on("request", (r) => urls.push(r.url()));
          // a script error fails the test at its end, and is shown at once
          tab.on("pageerror", (e) => {
            console.log(`page error: ${e.message}`);
            violations.push(e.message);
          });
          return { tab, violations, urls };
        };
        const signUp = async (role: string, email: string) => {
          const invite = await adminCli(stack, "console-user", "invite", "--tenant", t.tenantId, "--email", email, "--role", role);
          const p = await profile();
          await p.tab.goto(invite.invite_url);
          await p.tab.getByRole("button", { name: "Register a passkey" }).click();
          await p.tab.getByRole("heading", { name: "Verifications" }).waitFor();
          return p;
        };
        const { tab, violations, urls } = await signUp("developer", "dev@pages.example");

        // the overview: counts by status and channel from the service, and two drawn charts
        await tab.getByRole("link", { name: "Overview" }).click();
        const day = tab.getByRole("row", { name: /Last 24 hours/ });
        await day.waitFor();
        // pending, verified, suspended, failed, expired, revoked, success rate
        expect(await day.getByRole("cell").allTextContents()).toEqual(["1", "1", "0", "0", "0", "0", "100.0 %"]);
        expect(await tab.getByRole("row", { name: /^sms/ }).getByRole("cell").allTextContents()).toEqual(["1", "1"]);
        expect(
          await tab
            .getByRole("row", { name: /^email/ })
            .getByRole("cell")
            .allTextContents(),
        ).toEqual(["1", "1"]);
        // each chart drawn (pixels on its canvas), with its buckets and its total in its text alternative
        const drawn = await tab.evaluate(() =>
          Array.from(document.querySelectorAll("figure[data-chart]")).map((f) => {
            const canvas = f.querySelector("canvas") as HTMLCanvasElement;
            const pixels = canvas.getContext("2d")!.getImageData(0, 0, canvas.width, canvas.height).data;
            let painted = 0;
            for (let i = 3; i < pixels.length; i += 4) if (pixels[i] > 0) painted++;
            return { width: canvas.width, painted, buckets: Number((f as HTMLElement).dataset.buckets), label: canvas.getAttribute("aria-label") };
          }),
        );
        expect(drawn).toHaveLength(2);
        expect(drawn[0]).toMatchObject({ buckets: 25, label: "Last 24 hours: 2 verifications by status, per hour" });
        expect(drawn[1]).toMatchObject({ buckets: 31, label: "Last 30 days: 2 verifications by status, per day" });
        expect(drawn.every((d) => d.width > 100 && d.painted > 1000)).toBe(true);
        await shot(tab, "overview");
        await axe(tab, "overview");

        // find by identifier: typed another way, found, shown masked; the identifier is in no URL
        await tab.getByRole("link", { name: "Verifications" }).click();
        await tab.getByLabel("Identifier", { exact: true }).fill("  JO@Example.com ");
        await tab.getByRole("button", { name: "Find" }).click();
        await tab.getByRole("heading", { name: "Found 1 by identifier" }).waitFor();
        const found = tab.locator("table[data-found] tbody tr");
        expect(await found.count()).toBe(1);
        const row = await found.first().getByRole("cell").allTextContents();
        expect(row[0]).toBe(jo.body.id);
        expect(row[3]).toContain("***");
        expect(row.join(" ")).not.toContain("jo@example.com");
        expect(urls.filter((u) => /jo(%40|@)example/i.test(u))).toEqual([]);
        await axe(tab, "search");
        // the other tenant's and the live environment's are not found here
        expect(await tab.getByRole("link", { name: elsewhere.body.id }).count()).toBe(0);
        // (each wait below follows an answer that found one, so it waits for the new answer)
        await tab.getByLabel("Identifier", { exact: true }).fill(WALLET.toLowerCase());
        await tab.getByRole("button", { name: "Find" }).click();
        await tab.getByText("No verification of this identifier.").waitFor();
        // in live: the wallet (typed in lower case), and not jo@example.com
        await tab.getByRole("link", { name: "Live", exact: true }).click();
        // the live list is shown (its wallet listed) before the form is filled
        await tab.getByRole("link", { name: live.body.id }).waitFor();
        await tab.getByLabel("Identifier", { exact: true }).fill(WALLET.toLowerCase());
        await tab.getByRole("button", { name: "Find" }).click();
        await tab.getByRole("heading", { name: "Found 1 by identifier" }).waitFor();
        expect(await tab.locator("table[data-found] tbody tr").first().getByRole("cell").first().textContent()).toBe(live.body.id);
        await tab.getByLabel("Identifier", { exact: true }).fill("jo@example.com");
        await tab.getByRole("button", { name: "Find" }).click();
        await tab.getByText("No verification of this identifier.").waitFor();
        await tab.getByRole("link", { name: "Test", exact: true }).click();

        // validate the proof from its page: valid; compared with another identifier: not
        await tab.goto(`${base}/console/test/verifications/${jo.body.id}`);
        await tab.getByRole("button", { name: "Validate proof" }).click();
        await tab.locator('[data-validation="valid"]', { hasText: "Valid proof (email" }).waitFor();
        await tab.getByLabel("Identifier to compare (optional)").fill("someone@example.com");
        await tab.getByRole("button", { name: "Validate proof" }).click();
        await tab.locator('[data-validation="invalid"]').waitFor();
        await axe(tab, "verification with validation");

        // projects: one added, its branding edited with the preview following each keystroke, saved
        await tab.getByRole("link", { name: "Projects", exact: true }).click();
        await tab.getByLabel("Project name").fill("Brand Co");
        await tab.getByRole("button", { name: "Add a project" }).click();
        await tab.getByRole("heading", { name: "Branding of Brand Co" }).waitFor();
        const preview = tab.getByRole("group", { name: "Preview of the hosted page" });
        expect(await preview.locator('[data-preview="name"]').textContent()).toBe("Brand Co");
        await tab.getByLabel("Business name").fill("Brand & Sons");
        await tab.getByLabel("Primary colour").fill("#1a7f37");
        await tab.getByLabel("Support email").fill("help@brand.example");
        expect(await preview.locator('[data-preview="name"]').textContent()).toBe("Brand & Sons");
        expect(await preview.locator('[data-preview="support"]').textContent()).toBe("Help: help@brand.example");
        expect(await preview.locator('[data-preview="button"]').evaluate((el) => getComputedStyle(el).backgroundColor)).toBe("rgb(26, 127, 55)");
        await axe(tab, "branding");
        await shot(tab, "branding");
        await tab.getByRole("button", { name: "Save branding" }).click();
        await tab.getByText("Saved.").waitFor();
        const projects = (await c.get("/api/v1/me/projects?limit=100")).body.data as { id: string; name: string; branding: Record<string, unknown> }[];
        const brand = projects.find((p) => p.name === "Brand Co")!;
        expect(brand.branding).toMatchObject({ business_name: "Brand & Sons", primary_color: "#1a7f37", support_email: "help@brand.example" });
        await tab.getByRole("link", { name: "Projects", exact: true }).click();
        await tab
          .getByRole("row", { name: /Brand Co/ })
          .getByRole("link", { name: "Branding" })
          .waitFor();
        await axe(tab, "projects");

        // profiles made through the API, listed and shown
        const made = await c.post("/api/v1/me/profiles", {
          display_name: "Jo's shop",
          is_public: true,
          proofs: [{ verification_id: jo.body.id, label: "Sales email", mask_level: "partial" }],
        });
        expect(made.status, made.text).toBe(201);
        await tab.getByRole("link", { name: "Profiles", exact: true }).click();
        await tab.getByRole("link", { name: "Jo's shop" }).click();
        await tab.getByRole("heading", { name: "Profile Jo's shop" }).waitFor();
        await tab.getByRole("cell", { name: "Sales email" }).waitFor();
        expect(await tab.getByRole("link", { name: "Open the public page" }).getAttribute("href")).toBe(made.body.public_url);
        await axe(tab, "profile");
        await tab.getByRole("link", { name: "← All profiles" }).click();
        await tab.getByRole("cell", { name: "yes" }).waitFor();
        await axe(tab, "profiles");

        // retention: none yet; 0 refused with the API's validation_error; 90 days saved, as the operator's CLI reads it
        await tab.getByRole("link", { name: "Retention", exact: true }).click();
        await tab.getByRole("heading", { name: "Data retention (test)" }).waitFor();
        expect(await tab.locator('[data-field="retention"]').textContent()).toBe("Kept until redacted");
        await axe(tab, "retention");
        await tab.getByLabel("Retention in days (1 to 3650)").fill("0");
        await tab.getByRole("button", { name: "Save retention" }).click();
        await tab.getByRole("alert").filter({ hasText: "from 1 to 3650 (validation_error)" }).waitFor();
        await tab.getByLabel("Retention in days (1 to 3650)").fill("90");
        await tab.getByRole("button", { name: "Save retention" }).click();
        await tab.getByText("Saved.").waitFor();
        expect(await tab.locator('[data-field="retention"]').textContent()).toBe("90 days");
        expect(await adminCli(stack, "tenant", "show", "--tenant", t.tenantId)).toMatchObject({ live: { retention_days: null }, test: { retention_days: 90 } });
        await axe(tab, "retention set");

        // a viewer: searches and validates, but has no form to change and is refused when forcing one
        const viewer = await signUp("viewer", "vic@pages.example");
        await viewer.tab.getByLabel("Identifier", { exact: true }).fill("jo@example.com");
        await viewer.tab.getByRole("button", { name: "Find" }).click();
        await viewer.tab.getByRole("heading", { name: "Found 1 by identifier" }).waitFor();
        await viewer.tab.goto(`${base}/console/test/verifications/${jo.body.id}`);
        await viewer.tab.getByRole("button", { name: "Validate proof" }).click();
        await viewer.tab.locator('[data-validation="valid"]').waitFor();
        await viewer.tab.goto(`${base}/console/test/projects/${brand.id}/branding`);
        await viewer.tab.getByRole("heading", { name: "Branding of Brand Co" }).waitFor();
        expect(await viewer.tab.getByRole("button", { name: "Save branding" }).count()).toBe(0);
        expect(await viewer.tab.getByLabel("Business name").isDisabled()).toBe(true);
        await viewer.tab.getByRole("link", { name: "Projects", exact: true }).click();
        await viewer.tab
          .getByRole("row", { name: /Brand Co/ })
          .getByRole("link", { name: "Branding" })
          .waitFor();
        expect(await viewer.tab.getByRole("button", { name: "Add a project" }).count()).toBe(0);
        await viewer.tab.getByRole("link", { name: "Retention", exact: true }).click();
        await viewer.tab.locator('[data-field="retention"]', { hasText: "90 days" }).waitFor();
        expect(await viewer.tab.getByRole("button", { name: "Save retention" }).count()).toBe(0);
        const forced = await viewer.tab.evaluate(async (id) => {
          const me = await (await fetch("/console/api/me")).json();
          const headers = { "x-csrf-token": me.csrf_token, "content-type": "application/json" };
          const patch = await fetch(`/console/api/test/projects/${id}`, {
            method: "PATCH",
            headers,
            body: JSON.stringify({ branding: { business_name: "Vic" } }),
          });
          const add = await fetch("/console/api/test/projects", { method: "POST", headers, body: JSON.stringify({ name: "Vic's" }) });
          const keep = await fetch("/console/api/test/retention", { method: "PUT", headers, body: JSON.stringify({ retention_days: 1 }) });
          return [patch.status, add.status, keep.status];
        }, brand.id);
        expect(forced).toEqual([403, 403, 403]);
        expect(((await c.get(`/api/v1/me/projects/${brand.id}`)).body as { branding: { business_name: string } }).branding.business_name).toBe("Brand & Sons");
        // another tenant's project is not there for this tenant's session
        const theirs = await api(stack.url, other.testKey).post("/api/v1/me/projects", { name: "Theirs" });
        const peek = await tab.evaluate(async (id) => (await fetch(`/console/api/test/projects/${id}`)).status, theirs.body.id);
        expect(peek).toBe(404);

        // the audit log holds the searches (not what was searched) and the viewer's refusals
        const audit = await tab.evaluate(
          async () => (await (await fetch("/console/api/audit?limit=100")).json()).data as { action: string; outcome: string }[],
        );
        expect(audit.some((a) => a.action.endsWith("/search/verifications") && a.outcome === "ok")).toBe(true);
        expect(audit.filter((a) => a.outcome === "denied").length).toBeGreaterThanOrEqual(3);
        expect(audit).toContainEqual(expect.objectContaining({ action: "PUT /test/retention", outcome: "ok" }));
        expect(audit).toContainEqual(expect.objectContaining({ action: "PUT /console/api/test/retention", outcome: "denied" }));
        expect(JSON.stringify(audit)).not.toContain("jo@example.com");
        expect(violations).toEqual([]);
        expect(viewer.violations).toEqual([]);
      } finally {
        await browser.close();
      }
    });
  },
);
