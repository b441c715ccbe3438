// /api/v1/me/projects and their message templates, as a tenant uses them: the default project,
// create/get/patch/delete, validation, isolation between tenants and environments, templates
// (PUT/GET/DELETE/list/preview) and the rendered text in /api/v1/test/messages.
import { createServer, type AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { ManualClock } from "@icv/platform";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";
import { expectError as expectErrorNow, type ApiResponse } from "../support/expect-error.ts";

const clock = new ManualClock(Date.now());
const stack = useStack({}, clock);
const t = useTenant(stack, "Projects");
const other = useTenant(stack, "Other tenant");

const P = "/api/v1/me/projects";
const expectError = async (r: Promise<ApiResponse>, status: number, code: string) => expectErrorNow(await r, status, code);
const as = (key: string) => api(stack.url, key);

async function newProject(key: string, body: Record<string, unknown> = { name: "Shop" }) {
  const r = await as(key).post(P, body);
  expect(r.status, r.text).toBe(201);
  return r.body;
}

describe("projects", () => {
  it("lists a default project made on first use, once, in each environment", async () => {
    const [a, b] = await Promise.all([as(t.testKey).get(P), as(t.testKey).get(P)]);
    expect(a.status, a.text).toBe(200);
    expect(a.body.data).toHaveLength(1);
    expect(b.body.data[0].id).toBe(a.body.data[0].id);
    expect(a.body.data[0]).toMatchObject({ name: "Default project", is_default: true, description: null });
    expect(a.body.data[0].id).toMatch(/^prj_[0-9A-Z]{26}$/);
    expect(a.body.pagination).toEqual({ page: 1, limit: 20, total: 1, pages: 1, hasMore: false, has_more: false });
    const live = await as(t.liveKey).get(P);
    expect(live.body.data).toHaveLength(1);
    expect(live.body.data[0].id).not.toBe(a.body.data[0].id);
  });

  it("creates (201), reads, patches (null clears) and deletes a project", async () => {
    const p = await newProject(t.testKey, {
      name: "Acme shop",
      description: "Checkout",
      branding: {
        business_name: "Acme",
        logo_url: "https://cdn.acme.example/logo.png",
        primary_color: "#0A7F5A",
        support_email: "help@acme.example",
      },
      callbacks: { success_url: "https://acme.example/ok", failure_url: "https://acme.example/failed" },
    });
    expect(p).toMatchObject({
      name: "Acme shop",
      description: "Checkout",
      is_default: false,
      branding: {
        business_name: "Acme",
        logo_url: "https://cdn.acme.example/logo.png",
        primary_color: "#0a7f5a",
        support_email: "help@acme.example",
      },
      callbacks: { success_url: "https://acme.example/ok", failure_url: "https://acme.example/failed", cancel_url: null },
    });
    expect(new Date(p.created_at).toISOString()).toBe(p.created_at);
    expect((await as(t.testKey).get(`${P}/${p.id}`)).body).toEqual(p);

    clock.advance(1000);
    const patched = await as(t.testKey).patch(`${P}/${p.id}`, { description: null, branding: { primary_color: "#123" } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({
      name: "Acme shop",
      description: null,
      branding: { business_name: "Acme", primary_color: "#123" },
    });
    expect(patched.body.updated_at > p.updated_at).toBe(true);

    const del = await as(t.testKey).del(`${P}/${p.id}`);
    expect(del.status, del.text).toBe(200);
    await expectError(as(t.testKey).get(`${P}/${p.id}`), 404, "not_found");
  });

  it("refuses bad input: an http logo, a colour that is not hex, a bad email, no name, unknown fields", async () => {
    const bad: [Record<string, unknown>, string][] = [
      [{ name: "x", branding: { logo_url: "http://cdn.example/logo.png" } }, "branding.logo_url"],
      [{ name: "x", branding: { logo_url: "javascript:alert(1)" } }, "branding.logo_url"],
      [{ name: "x", branding: { primary_color: "red;}" } }, "branding.primary_color"],
      [{ name: "x", branding: { support_email: "not an email" } }, "branding.support_email"],
      [{ name: "x", callbacks: { success_url: "ftp://x.example/" } }, "callbacks.success_url"],
    ];
    for (const [body, field] of bad) {
      const r = await expectError(as(t.testKey).post(P, body), 400, "validation_error");
      expect(JSON.stringify(r.details), field).toContain(field);
    }
    await expectError(as(t.testKey).post(P, { description: "no name" }), 400, "validation_error");
    await expectError(as(t.testKey).post(P, { name: "x", is_default: true }), 400, "validation_error");
  });

  it("the default project cannot be deleted", async () => {
    const d = (await as(t.testKey).get(P)).body.data[0];
    await expectError(as(t.testKey).del(`${P}/${d.id}`), 409, "invalid_state");
  });

  it("another tenant's or environment's project answers 404 on every route, and is refused as a project_id", async () => {
    const p = await newProject(t.testKey);
    for (const key of [other.testKey, t.liveKey]) {
      await expectError(as(key).get(`${P}/${p.id}`), 404, "not_found");
      await expectError(as(key).patch(`${P}/${p.id}`, { name: "mine" }), 404, "not_found");
      await expectError(as(key).del(`${P}/${p.id}`), 404, "not_found");
      await expectError(as(key).get(`${P}/${p.id}/templates`), 404, "not_found");
      await expectError(as(key).put(`${P}/${p.id}/templates/sms/verification_request`, { body: "{{code}}" }), 404, "not_found");
      await expectError(as(key).get(`${P}/${p.id}/templates/sms/verification_request`), 404, "not_found");
      await expectError(as(key).post(`${P}/${p.id}/templates/preview`, { channel: "sms", type: "verification_request" }), 404, "not_found");
      const v = await expectError(
        as(key).post("/api/v1/verifications", { type: "email", channel: "email", identifier: "a@example.com", project_id: p.id }),
        400,
        "validation_error",
      );
      expect(v.details[0].field).toBe("project_id");
      await expectError(as(key).post("/api/v1/sessions", { channel: "telegram", project_id: p.id }), 400, "validation_error");
      await expectError(as(key).post("/api/v1/verification-requests", { assets: [{ type: "email" }], project_id: p.id }), 400, "validation_error");
    }
    // unchanged by the attempts
    expect((await as(t.testKey).get(`${P}/${p.id}`)).body.name).toBe("Shop");
  });
});

describe("the logo proxy (SSRF)", () => {
  it("refuses a logo_url at a loopback, private or metadata address when it is saved (the default configuration), and never connects", async () => {
    let connections = 0;
    const inside = createServer((sock) => {
      connections++;
      sock.destroy();
    });
    await new Promise<void>((r) => inside.listen(0, "127.0.0.1", r));
    const port = (inside.address() as AddressInfo).port;
    try {
      for (const logo of [
        `https://127.0.0.1:${port}/logo.png`,
        `https://localhost:${port}/logo.png`,
        `https://[::ffff:127.0.0.1]:${port}/logo.png`,
        "https://169.254.169.254/latest/meta-data",
      ]) {
        const e = await expectError(as(t.testKey).post(P, { name: "Inside", branding: { logo_url: logo } }), 400, "validation_error");
        expect(
          e.details?.map((d: { field: string }) => d.field),
          logo,
        ).toEqual(["branding.logo_url"]);
        expect(e.message, logo).toMatch(/refused: .* (loopback|metadata)/);
        // nor set later on a saved project
        const saved = await newProject(t.testKey, { name: "Outside" });
        await expectError(as(t.testKey).patch(`${P}/${saved.id}`, { branding: { logo_url: logo } }), 400, "validation_error");
        expect((await as(t.testKey).get(`${P}/${saved.id}`)).body.branding.logo_url).toBeNull();
      }
      // a name that does not resolve (yet) is kept: it is checked again, like every address, when fetched
      const later = await newProject(t.testKey, { name: "Later", branding: { logo_url: "https://cdn.not-yet.example/logo.png" } });
      expect(later.branding.logo_url).toBe("https://cdn.not-yet.example/logo.png");
      expect(connections).toBe(0);
    } finally {
      inside.close();
    }
  });
});

describe("message templates", () => {
  it("PUT stores a template, GET and the list show it, DELETE returns to the built-in text", async () => {
    const p = await newProject(t.testKey);
    const base = `${P}/${p.id}/templates`;
    const builtIn = await as(t.testKey).get(`${base}/sms/verification_request`);
    expect(builtIn.status, builtIn.text).toBe(200);
    expect(builtIn.body).toMatchObject({ custom: false, channel: "sms", type: "verification_request" });
    expect(builtIn.body.body).toContain("{{code}}");

    const put = await as(t.testKey).put(`${base}/sms/verification_request`, { body: "{{business_name}} code: {{code}} ({{expires_in}})" });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toMatchObject({
      project_id: p.id,
      custom: true,
      is_active: true,
      body: "{{business_name}} code: {{code}} ({{expires_in}})",
    });
    expect((await as(t.testKey).get(`${base}/sms/verification_request`)).body.custom).toBe(true);
    const list = await as(t.testKey).get(base);
    expect(list.body.data.map((x: { channel: string; type: string }) => `${x.channel}/${x.type}`)).toEqual(["sms/verification_request"]);
    expect(list.body.pagination.total).toBe(1);

    expect((await as(t.testKey).del(`${base}/sms/verification_request`)).status).toBe(200);
    expect((await as(t.testKey).get(`${base}/sms/verification_request`)).body.custom).toBe(false);
    await expectError(as(t.testKey).del(`${base}/sms/verification_request`), 404, "not_found");
  });

  it("refuses an unknown variable, a *_request without {{code}}, a body over 2,000 characters, a subject off email, stray braces", async () => {
    const p = await newProject(t.testKey);
    const base = `${P}/${p.id}/templates`;
    const r1 = await expectError(as(t.testKey).put(`${base}/email/verification_request`, { body: "Hi {{first_name}}, {{code}}" }), 400, "validation_error");
    expect(r1.message).toContain("first_name");
    const r2 = await expectError(as(t.testKey).put(`${base}/sms/2fa_request`, { body: "Welcome to {{business_name}}" }), 400, "validation_error");
    expect(r2.details[0].code).toBe("missing_code");
    await expectError(as(t.testKey).put(`${base}/email/verification_request`, { body: `{{code}} ${"x".repeat(1992)}` }), 400, "validation_error");
    await expectError(as(t.testKey).put(`${base}/sms/verification_request`, { body: `{{code}} ${"x".repeat(1500)}` }), 400, "validation_error");
    // 2,000 exactly is accepted off SMS
    expect((await as(t.testKey).put(`${base}/telegram/verification_expired`, { body: "x".repeat(2000) })).status).toBe(200);
    await expectError(as(t.testKey).put(`${base}/sms/verification_request`, { body: "{{code}}", subject: "Hi" }), 400, "validation_error");
    await expectError(as(t.testKey).put(`${base}/sms/verification_request`, { body: "{{code}} {{ oops" }), 400, "validation_error");
    await expectError(as(t.testKey).put(`${base}/fax/verification_request`, { body: "{{code}}" }), 400, "validation_error");
    await expectError(as(t.testKey).put(`${base}/sms/welcome`, { body: "{{code}}" }), 400, "validation_error");
    // a success message needs no code; nothing above was stored
    expect((await as(t.testKey).put(`${base}/telegram/verification_success`, { body: "Done, {{business_name}}!" })).status).toBe(200);
    expect((await as(t.testKey).get(base)).body.data).toHaveLength(2);
  });

  it("answers 413 to an oversize body (over 10 KB) on PUT, preview and project create, and stores nothing", async () => {
    const p = await newProject(t.testKey);
    const base = `${P}/${p.id}/templates`;
    const huge = `{{code}} ${"x".repeat(11_000)}`;
    await expectError(as(t.testKey).put(`${base}/email/verification_request`, { body: huge }), 413, "payload_too_large");
    await expectError(as(t.testKey).post(`${base}/preview`, { channel: "email", type: "verification_request", body: huge }), 413, "payload_too_large");
    expect((await as(t.testKey).get(base)).body.data).toHaveLength(0);
    const before = (await as(t.testKey).get(P)).body.data.length;
    await expectError(as(t.testKey).post(P, { name: "Big", description: "d".repeat(11_000) }), 413, "payload_too_large");
    expect((await as(t.testKey).get(P)).body.data).toHaveLength(before);
  });

  it("previews with sample values, HTML-escaped for email and plain for SMS", async () => {
    const p = await newProject(t.testKey, { name: "Esc", branding: { business_name: "Tom & Jerry's <Shop>" } });
    const base = `${P}/${p.id}/templates`;
    const email = await as(t.testKey).post(`${base}/preview`, {
      channel: "email",
      type: "verification_request",
      body: "<b>{{business_name}}</b> code {{code}}",
      subject: "{{business_name}}: {{code}}",
    });
    expect(email.status, email.text).toBe(200);
    expect(email.body.subject).toBe("Tom & Jerry's <Shop>: A1B2C3");
    expect(email.body.html).toContain("&#60;b&#62;Tom &#38; Jerry&#39;s &#60;Shop&#62;&#60;/b&#62; code A1B2C3");
    expect(email.body.html).not.toContain("<b>");
    expect(email.body.body).toBe("<b>Tom & Jerry's <Shop></b> code A1B2C3");
    const sms = await as(t.testKey).post(`${base}/preview`, { channel: "sms", type: "login_request" });
    expect(sms.body).toMatchObject({ html: null, subject: null });
    expect(sms.body.body).toContain("A1B2C3");
    await expectError(as(t.testKey).post(`${base}/preview`, { channel: "sms", type: "login_request", body: "no code" }), 400, "validation_error");
  });

  it("the code message uses the project's template: test messages show the rendered text; a value holding {{code}} stays text", async () => {
    const p = await newProject(t.testKey, {
      name: "Brand",
      branding: { business_name: "Brand {{code}}", support_email: "help@brand.example" },
    });
    await as(t.testKey).put(`${P}/${p.id}/templates/email/verification_request`, {
      body: "Hello {{user_identifier}}, your {{business_name}} code is {{code}}. Help: {{support_email}}",
      subject: "{{business_name}} code",
    });
    const v = await as(t.testKey).post("/api/v1/verifications", {
      type: "email",
      channel: "email",
      identifier: "jane.doe@example.com",
      project_id: p.id,
    });
    expect(v.status, v.text).toBe(201);
    const m = (await as(t.testKey).get(`/api/v1/test/messages?verification_id=${v.body.id}`)).body.data[0];
    expect(m.subject).toBe("Brand {{code}} code");
    const code = /your Brand \{\{code\}\} code is ([A-Z0-9]{6})\./.exec(m.text)?.[1];
    expect(m.text).toContain("Hello j***e@example.com");
    expect(m.text).toContain("Help: help@brand.example");
    expect(code).toBeDefined();
    const ok = await as(t.testKey).post(`/api/v1/verifications/${v.body.id}/submit`, { challenge_code: code });
    expect(ok.body.status).toBe("verified");

    // the same tenant without project_id: the default project has no template, the built-in text
    const d = await as(t.testKey).post("/api/v1/verifications", { type: "email", channel: "email", identifier: "plain@example.com" });
    const dm = (await as(t.testKey).get(`/api/v1/test/messages?verification_id=${d.body.id}`)).body.data[0];
    expect(dm.subject).toMatch(/^Your verification code: [A-Z0-9]{6}$/);

    // an inactive template is kept but the built-in text goes out
    await as(t.testKey).put(`${P}/${p.id}/templates/email/verification_request`, { body: "Inactive {{code}}", is_active: false });
    const i = await as(t.testKey).post("/api/v1/verifications", {
      type: "email",
      channel: "email",
      identifier: "inactive@example.com",
      project_id: p.id,
    });
    const im = (await as(t.testKey).get(`/api/v1/test/messages?verification_id=${i.body.id}`)).body.data[0];
    expect(im.text).not.toContain("Inactive");
    expect(im.subject).toMatch(/^Brand \{\{code\}\}: Your verification code: /);
  });

  it("a request's action_type picks login_request; its verifications and resends use the request's project", async () => {
    const p = await newProject(t.testKey, { name: "Login", callbacks: { success_url: "https://login.example/done" } });
    await as(t.testKey).put(`${P}/${p.id}/templates/email/login_request`, { body: "Login code {{code}} for {{user_identifier}}" });
    const r = await as(t.testKey).post("/api/v1/verification-requests", {
      action_type: "login",
      project_id: p.id,
      assets: [{ type: "email", identifier: "login.user@example.com", channel: "email" }],
    });
    expect(r.status, r.text).toBe(201);
    // the project's success_url is the default redirect_url
    expect(r.body.redirect_url).toBe("https://login.example/done");
    expect(r.body.project_id).toBe(p.id);
    expect((await as(t.testKey).get(`/api/v1/verification-requests/${r.body.id}`)).body.project_id).toBe(p.id);
    const vid = r.body.assets[0].verification_id;
    const first = (await as(t.testKey).get(`/api/v1/test/messages?verification_id=${vid}`)).body.data[0];
    expect(first.text).toMatch(/^Login code [A-Z0-9]{6} for l\*\*\*r@example\.com$/);
    clock.advance(61_000);
    expect((await as(t.testKey).post(`/api/v1/verifications/${vid}/resend`, {})).status).toBe(200);
    const resent = (await as(t.testKey).get(`/api/v1/test/messages?verification_id=${vid}`)).body.data;
    expect(resent).toHaveLength(2);
    expect(resent[0].text).toMatch(/^Login code [A-Z0-9]{6} for /);
    expect(resent[0].text).not.toBe(first.text);
  });
});
