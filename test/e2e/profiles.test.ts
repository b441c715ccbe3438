// Profiles as a tenant uses them (/api/v1/me/profiles) and as anyone sees them (/p/{id} and
// /p/{id}.json): CRUD, bad input (oversize body, over 50 proofs, unverified or another tenant's
// verification, http avatars), tenant and environment isolation, masks, each proof's state
// re-checked at read (revoked, expired), and the page itself in Chromium (content, strict CSP, no
// script), which also takes the screenshot in docs/.
import { existsSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ManualClock } from "@icv/platform";
import { expectError } from "../support/expect-error.ts";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";

const CHROMIUM = "/usr/bin/chromium";
const DOC_SCREENSHOT = "docs/profile-page.png";
const clock = new ManualClock(Date.now());
const stack = useStack({}, clock);
const shop = useTenant(stack, "Acme Shop");
const rival = useTenant(stack, "Rival");

type Client = ReturnType<typeof api>;
const test = () => api(stack.url, shop.testKey);

let n = 0;
/** A test verification completed by test-verify; answers its id. */
async function verified(c: Client, body: Record<string, unknown>): Promise<string> {
  const v = await c.post("/api/v1/verifications", body);
  expect(v.status, v.text).toBe(201);
  const done = await c.post(`/api/v1/verifications/${v.body.id}/test-verify`);
  expect(done.status, done.text).toBe(200);
  return v.body.id;
}
const email = (c: Client, extra: Record<string, unknown> = {}) =>
  verified(c, { type: "email", channel: "email", identifier: `sales${n++}@acme.example`, ...extra });
const phone = (c: Client) => verified(c, { type: "phone", channel: "telegram", identifier: `+3706940${String(n++).padStart(4, "0")}` });
const domain = (c: Client) => verified(c, { type: "domain", channel: "dns", identifier: `shop${n++}.acme.example` });

async function create(c: Client, body: Record<string, unknown>) {
  const r = await c.post("/api/v1/me/profiles", body);
  expect(r.status, r.text).toBe(201);
  return r.body;
}

describe("the profile resource", () => {
  it("creates, reads, lists, updates and deletes a profile", async () => {
    const c = test();
    const [e, p] = [await email(c), await phone(c)];
    const made = await create(c, {
      display_name: "Acme Shop",
      bio: "Hand-made tools since 1921.",
      avatar_url: "https://cdn.acme.example/logo.png",
      proofs: [
        { verification_id: e, label: "Sales email", mask_level: "partial" },
        { verification_id: p, label: "Support line", mask_level: "hidden", display_order: 5 },
      ],
    });
    expect(made).toEqual({
      id: expect.stringMatching(/^prf_[0-9A-Z]{26}$/),
      display_name: "Acme Shop",
      bio: "Hand-made tools since 1921.",
      avatar_url: "https://cdn.acme.example/logo.png",
      is_public: false,
      proofs: [
        { verification_id: e, label: "Sales email", mask_level: "partial", display_order: 0 },
        { verification_id: p, label: "Support line", mask_level: "hidden", display_order: 5 },
      ],
      public_url: expect.stringMatching(/^https?:\/\/[^/]+\/p\/prf_[0-9A-Z]{26}$/),
      created_at: expect.any(String),
      updated_at: made.created_at,
    });
    expect(made.public_url.endsWith(`/p/${made.id}`)).toBe(true);
    expect((await c.get(`/api/v1/me/profiles/${made.id}`)).body).toEqual(made);
    const list = await c.get("/api/v1/me/profiles?limit=100");
    expect(list.status).toBe(200);
    expect(list.body.data.map((x: any) => x.id)).toContain(made.id);
    expect(list.body.pagination).toMatchObject({ page: 1, limit: 100 });

    clock.advance(1_000);
    const patched = await c.patch(`/api/v1/me/profiles/${made.id}`, {
      bio: null,
      is_public: true,
      proofs: [{ verification_id: p, label: "Phone", mask_level: "full" }],
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({
      display_name: "Acme Shop",
      bio: null,
      avatar_url: "https://cdn.acme.example/logo.png",
      is_public: true,
    });
    expect(patched.body.proofs).toEqual([{ verification_id: p, label: "Phone", mask_level: "full", display_order: 0 }]);
    expect(Date.parse(patched.body.updated_at)).toBeGreaterThan(Date.parse(made.updated_at));

    expect((await c.del(`/api/v1/me/profiles/${made.id}`)).body).toEqual({ success: true, id: made.id });
    expectError(await c.get(`/api/v1/me/profiles/${made.id}`), 404, "not_found");
    expectError(await c.del(`/api/v1/me/profiles/${made.id}`), 404, "not_found");
    expectError(await api(stack.url).get(`/p/${made.id}.json`), 404, "not_found");
  });

  it("refuses bad input: an oversize body, over 50 proofs, an http avatar, unknown fields, no name", async () => {
    const c = test();
    const big = await c.post("/api/v1/me/profiles", { display_name: "x", bio: "b".repeat(11_000) });
    expectError(big, 413, "payload_too_large");
    const e = await email(c);
    const many = Array.from({ length: 51 }, (_, i) => ({ verification_id: e, label: `p${i}` }));
    const tooMany = expectError(await c.post("/api/v1/me/profiles", { display_name: "Many", proofs: many }), 400, "validation_error");
    expect(tooMany.details.map((d: any) => d.field)).toContain("body.proofs");
    const http = expectError(await c.post("/api/v1/me/profiles", { display_name: "A", avatar_url: "http://cdn.acme.example/a.png" }), 400, "validation_error");
    expect(http.details[0].field).toBe("body.avatar_url");
    expectError(await c.post("/api/v1/me/profiles", { display_name: "A", avatar_url: "javascript:alert(1)" }), 400, "validation_error");
    expectError(await c.post("/api/v1/me/profiles", { display_name: "A", owner: "me" }), 400, "validation_error");
    expectError(await c.post("/api/v1/me/profiles", { bio: "no name" }), 400, "validation_error");
    const dup = expectError(
      await c.post("/api/v1/me/profiles", { display_name: "A", proofs: [{ verification_id: e }, { verification_id: e }] }),
      400,
      "validation_error",
    );
    expect(dup.details[0].field).toBe("proofs.1.verification_id");
    expectError(await c.post("/api/v1/me/profiles", { display_name: "A", proofs: [{ verification_id: e, mask_level: "some" }] }), 400, "validation_error");
  });

  it("lists only verified verifications of the key's own tenant and environment, naming the item that is not", async () => {
    const c = test();
    const ok = await email(c);
    const pending = (await c.post("/api/v1/verifications", { type: "email", channel: "email", identifier: `pending${n++}@acme.example` })).body.id;
    const theirs = await email(api(stack.url, rival.testKey));
    const live = (
      await api(stack.url, shop.liveKey).post("/api/v1/verifications", {
        type: "domain",
        channel: "dns",
        identifier: `live${n++}.acme.example`,
      })
    ).body.id;
    for (const [bad, why] of [
      [pending, "pending"],
      [theirs, "another tenant's"],
      [live, "another environment's"],
      ["ver_01J00000000000000000000000", "unknown"],
    ]) {
      const e = expectError(
        await c.post("/api/v1/me/profiles", { display_name: why, proofs: [{ verification_id: ok }, { verification_id: bad }] }),
        400,
        "validation_error",
      );
      expect(e.details, why).toEqual([
        {
          field: "proofs.1.verification_id",
          message: "must be a verified verification of this tenant and environment",
          code: "not_verified",
        },
      ]);
    }
    // an update is checked the same way
    const p = await create(c, { display_name: "Fine", proofs: [{ verification_id: ok }] });
    expectError(await c.patch(`/api/v1/me/profiles/${p.id}`, { proofs: [{ verification_id: theirs }] }), 400, "validation_error");
  });

  it("answers 404 for another tenant's or environment's profile", async () => {
    const p = await create(test(), { display_name: "Mine", is_public: true });
    for (const c of [api(stack.url, rival.testKey), api(stack.url, shop.liveKey)]) {
      expectError(await c.get(`/api/v1/me/profiles/${p.id}`), 404, "not_found");
      expectError(await c.patch(`/api/v1/me/profiles/${p.id}`, { display_name: "Taken" }), 404, "not_found");
      expectError(await c.del(`/api/v1/me/profiles/${p.id}`), 404, "not_found");
      expect((await c.get("/api/v1/me/profiles?limit=100")).body.data.map((x: any) => x.id)).not.toContain(p.id);
    }
    expect((await test().get(`/api/v1/me/profiles/${p.id}`)).body.display_name).toBe("Mine");
  });
});

describe("the public profile", () => {
  it("is 404 while not public, and shows masks, proof states and no tenant data once public", async () => {
    const c = test();
    const e = await email(c, { external_user_id: "acct-42", client_metadata: { plan: "gold" } });
    const p = await phone(c);
    const d = await domain(c);
    const prof = await create(c, {
      display_name: "Acme <Shop>",
      proofs: [
        { verification_id: d, label: "Website", mask_level: "full", display_order: 0 },
        { verification_id: e, label: "Sales", mask_level: "partial", display_order: 1 },
        { verification_id: p, label: "Phone", mask_level: "hidden", display_order: 2 },
      ],
    });
    const anyone = api(stack.url);
    expectError(await anyone.get(`/p/${prof.id}.json`), 404, "not_found");
    expect((await anyone.get(`/p/${prof.id}`)).status).toBe(404);
    await c.patch(`/api/v1/me/profiles/${prof.id}`, { is_public: true });

    const r = await anyone.get(`/p/${prof.id}.json`);
    expect(r.status, r.text).toBe(200);
    const domainName = (await c.get(`/api/v1/verifications/${d}`)).body.identifier;
    const emailAddress = (await c.get(`/api/v1/verifications/${e}`)).body.identifier;
    expect(r.body).toMatchObject({ id: prof.id, display_name: "Acme <Shop>", test: true, checked_at: expect.any(String) });
    expect(r.body.proofs).toEqual([
      {
        label: "Website",
        type: "domain",
        channel: "dns",
        identifier: domainName,
        verified_at: expect.any(String),
        status: "valid",
        expires_at: expect.any(String),
        revoked_at: null,
        // its place in the transparency log once logged (within 5 s of its issuance)
        log_index: expect.toBeOneOf([null, expect.any(Number)]),
      },
      {
        label: "Sales",
        type: "email",
        channel: "email",
        identifier: expect.stringMatching(/^s\*\*\*\d@acme\.example$/),
        verified_at: expect.any(String),
        status: "valid",
        expires_at: expect.any(String),
        revoked_at: null,
        // its place in the transparency log once logged (within 5 s of its issuance)
        log_index: expect.toBeOneOf([null, expect.any(Number)]),
      },
      {
        label: "Phone",
        type: "phone",
        channel: "telegram",
        identifier: null,
        verified_at: expect.any(String),
        status: "valid",
        expires_at: expect.any(String),
        revoked_at: null,
        // its place in the transparency log once logged (within 5 s of its issuance)
        log_index: expect.toBeOneOf([null, expect.any(Number)]),
      },
    ]);
    expect(r.text).not.toContain(emailAddress);
    expect(r.text).not.toMatch(/acct-42|gold|ten_|ver_|\+3706940/);
    // the page escapes what the tenant wrote
    const html = await anyone.get(`/p/${prof.id}`);
    expect(html.text).toContain("Acme &lt;Shop&gt;");
    expect(html.text).not.toContain("<Shop>");
    expect(html.text).not.toContain(emailAddress);
  });

  it("shows a revoked proof as revoked and an expired one as expired, never as valid", async () => {
    const c = test();
    const revoked = await email(c);
    const expiring = await email(c, { proof_expires_in: 60 });
    const fine = await email(c);
    const prof = await create(c, {
      display_name: "Checked live",
      is_public: true,
      proofs: [revoked, expiring, fine].map((verification_id, i) => ({ verification_id, label: ["Revoked", "Expiring", "Fine"][i] })),
    });
    const states = async () => (await api(stack.url).get(`/p/${prof.id}.json`)).body.proofs.map((x: any) => [x.label, x.status]);
    expect(await states()).toEqual([
      ["Revoked", "valid"],
      ["Expiring", "valid"],
      ["Fine", "valid"],
    ]);

    const rv = await c.post(`/api/v1/proofs/${revoked}/revoke`, { reason: "fraud" });
    expect(rv.status, rv.text).toBe(200);
    clock.advance(61_000);
    expect(await states()).toEqual([
      ["Revoked", "revoked"],
      ["Expiring", "expired"],
      ["Fine", "valid"],
    ]);
    const one = (await api(stack.url).get(`/p/${prof.id}.json`)).body.proofs[0];
    expect(one.revoked_at).toBe(rv.body.revoked_at);
    const html = (await api(stack.url).get(`/p/${prof.id}`)).text;
    expect(html).toMatch(/class="proof proof-revoked"[\s\S]*Revoked[\s\S]*class="proof proof-expired"[\s\S]*Expired[\s\S]*class="proof proof-valid"/);
  });

  it("answers 503 rather than an unchecked page while the proof service is away", async () => {
    const c = test();
    const prof = await create(c, { display_name: "Unchecked", is_public: true, proofs: [{ verification_id: await email(c) }] });
    await stack.restart("proof", async () => {
      expectError(await api(stack.url).get(`/p/${prof.id}.json`), 503, "service_unavailable");
      const page = await api(stack.url).get(`/p/${prof.id}`);
      expect(page.status).toBe(503);
      expect(page.text).not.toContain("Verified");
    });
    expect((await api(stack.url).get(`/p/${prof.id}.json`)).body.proofs[0].status).toBe("valid");
  });

  it("answers 404 for an unknown or malformed id, and is limited per client IP", async () => {
    const anyone = api(stack.url);
    expectError(await anyone.get("/p/prf_01J00000000000000000000000.json"), 404, "not_found");
    expectError(await anyone.get("/p/not-an-id.json"), 404, "not_found");
    expect((await anyone.get("/p/prf_01J00000000000000000000000")).status).toBe(404);
    const r = await anyone.get("/p/prf_01J00000000000000000000000.json");
    expect(Number(r.headers.get("x-ratelimit-limit"))).toBeGreaterThan(0);
  });
});

describe.skipIf(!existsSync(CHROMIUM))(
  `the public page in Chromium${existsSync(CHROMIUM) ? "" : " (skipped: /usr/bin/chromium is absent; .ci/run installs it)"}`,
  () => {
    it("shows the profile and its proofs, under a strict CSP, with no script; takes the docs screenshot", { timeout: 90_000 }, async () => {
      const { chromium } = await import("playwright-core");
      const c = test();
      const d = await domain(c);
      const e = await email(c);
      const w = await phone(c);
      const gone = await email(c);
      const prof = await create(c, {
        display_name: "Acme Tools",
        bio: "Hand-made tools since 1921. These are the accounts we really use.",
        is_public: true,
        proofs: [
          { verification_id: d, label: "Website", mask_level: "full" },
          { verification_id: e, label: "Sales email", mask_level: "partial" },
          { verification_id: w, label: "Support phone", mask_level: "hidden" },
          { verification_id: gone, label: "Old sales email", mask_level: "partial" },
        ],
      });
      expect((await c.post(`/api/v1/proofs/${gone}/revoke`, { reason: "asset_transferred" })).status).toBe(200);
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
        const tab = await (await browser.newContext({ viewport: { width: 900, height: 900 } })).newPage();
        const origins = new Set<string>();
        tab.on("request", (q) => void origins.add(new URL(q.url()).origin));
        const violations: string[] = [];
        tab.on("console", (m) => {
          if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
        });
        const res = await tab.goto(`${stack.url}/p/${prof.id}`);
        expect(res!.status()).toBe(200);
        expect(res!.headers()["content-security-policy"]).toBe(
          "default-src 'none'; script-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        );
        expect(res!.headers()["referrer-policy"]).toBe("no-referrer");
        expect(res!.headers()["x-frame-options"]).toBe("DENY");
        await tab.getByRole("heading", { level: 1, name: "Acme Tools" }).waitFor();
        const cards = tab.locator("li.proof");
        expect(await cards.count()).toBe(4);
        expect(await cards.nth(0).locator("h3").textContent()).toBe("Website");
        expect(await cards.nth(0).locator(".status").textContent()).toBe("Verified");
        expect(await cards.nth(2).locator("dd").nth(1).textContent()).toBe("Hidden");
        expect(await cards.nth(3).locator(".status").textContent()).toBe("Revoked");
        expect(await tab.getByText("Test mode").isVisible()).toBe(true);
        // the stylesheet applied (our own file), and nothing ran or was loaded from elsewhere
        expect(await tab.evaluate(() => getComputedStyle(document.querySelector("li.proof")!).borderLeftWidth)).toBe("4px");
        expect(await tab.locator("script").count()).toBe(0);
        expect([...origins]).toEqual([new URL(stack.url).origin]);
        expect(violations).toEqual([]);
        await tab.setViewportSize({ width: 360, height: 780 });
        expect(await tab.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
        await tab.setViewportSize({ width: 900, height: 900 });
        // every run leaves a fresh one in test-artifacts/; docs/ keeps its committed copy (delete it to retake it)
        const shot = await tab.screenshot({ path: "test-artifacts/profile-page.png", fullPage: true });
        if (!existsSync(DOC_SCREENSHOT)) writeFileSync(DOC_SCREENSHOT, shot);
      } finally {
        await browser.close();
      }
    });

    it("allows the avatar's own https origin and no other in img-src", async () => {
      const p = await create(test(), { display_name: "Avatar", is_public: true, avatar_url: "https://cdn.acme.example/a.png" });
      const r = await api(stack.url).get(`/p/${p.id}`);
      expect(r.headers.get("content-security-policy")).toContain("img-src 'self' https://cdn.acme.example;");
      expect(r.text).toContain('<img class="avatar" src="https://cdn.acme.example/a.png" alt="" referrerpolicy="no-referrer"');
    });
  },
);
