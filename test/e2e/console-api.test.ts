// The tenant console's API (DECISIONS "Tenant console and API reference"), driven as a browser
// drives it: an operator's invite, a passkey registered from it (a software authenticator speaking
// real WebAuthn), sessions in an HttpOnly SameSite=Strict cookie with a CSRF token on every change,
// roles, the audit log, and tenants and environments kept apart.
import { describe, expect, it } from "vitest";
import { adminCli } from "../support/admin-cli.ts";
import { SoftAuthenticator } from "../support/authenticator.ts";
import { expectError } from "../support/expect-error.ts";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";

const ORIGIN = "http://localhost:8080";
// each "browser" has its own client address (a loopback proxy's X-Forwarded-For counts)
const stack = useStack({ PUBLIC_BASE_URL: ORIGIN, TRUST_PROXY: "loopback" });
const acme = useTenant(stack, "Acme");
const other = useTenant(stack, "Other");

// addresses of this run only (with REDIS_URL the limits' counts outlive a run by a minute)
const RUN = `10.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
let ips = 0;
/** A browser of the console: its cookie jar (the session cookie only) and its CSRF token. */
class Browser {
  cookie = "";
  csrf = "";
  setCookie = "";
  readonly ip = `${RUN}.${++ips}`;
  readonly authenticator = new SoftAuthenticator("localhost", ORIGIN);

  async call(method: string, path: string, body?: unknown, opts: { csrf?: boolean } = {}) {
    const res = await fetch(stack.url + path, {
      method,
      headers: {
        "x-forwarded-for": this.ip,
        ...(this.cookie ? { cookie: this.cookie } : {}),
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
        ...(opts.csrf !== false && this.csrf && method !== "GET" ? { "x-csrf-token": this.csrf } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const set = res.headers.getSetCookie();
    if (set.length) {
      this.setCookie = set[0];
      const [pair] = set[0].split(";");
      this.cookie = pair.endsWith("=") ? "" : pair;
    }
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined, text };
  }
  get = (path: string) => this.call("GET", path);
  post = (path: string, body?: unknown, opts?: { csrf?: boolean }) => this.call("POST", path, body, opts);

  /** Opens an invite link: registers a passkey from it and is signed in. */
  async accept(inviteUrl: string) {
    const token = new URL(inviteUrl).hash.slice(1);
    const o = await this.post("/console/api/invite/options", { token });
    if (o.status !== 200) return o;
    const r = await this.post("/console/api/invite/accept", { token, response: this.authenticator.register(o.body.options) });
    if (r.status === 200) this.csrf = r.body.csrf_token;
    return r;
  }

  async signIn(authenticator = this.authenticator) {
    const o = await this.post("/console/api/sign-in/options");
    expect(o.status, o.text).toBe(200);
    const r = await this.post("/console/api/sign-in", { response: authenticator.assert(o.body.options) });
    if (r.status === 200) this.csrf = r.body.csrf_token;
    return r;
  }
}

const invite = async (tenantId: string, email: string, role: string) =>
  (await adminCli(stack, "console-user", "invite", "--tenant", tenantId, "--email", email, "--role", role)) as { invite_url: string; user_id: string };

/** A signed-in browser of a tenant's person with this role, invited by the operator. */
async function person(tenantId: string, email: string, role: string) {
  const b = new Browser();
  const r = await b.accept((await invite(tenantId, email, role)).invite_url);
  expect(r.status, r.text).toBe(200);
  return b;
}

/** A verified test verification of a tenant, made through the public API with its test key. */
async function verified(key: string) {
  const c = api(stack.url, key);
  const v = await c.post("/api/v1/verifications", { type: "email", channel: "email", identifier: `u${Date.now()}@example.com` });
  expect(v.status, v.text).toBe(201);
  expect((await c.post(`/api/v1/verifications/${v.body.id}/test-verify`)).status).toBe(200);
  return v.body.id as string;
}

describe("the console's sign-in", { timeout: 120_000 }, () => {
  it("an operator's invite registers a passkey once; the session is an HttpOnly SameSite=Strict cookie with a CSRF token", async () => {
    const inv = await invite(acme.tenantId, "ada@acme.example", "admin");
    expect(inv.invite_url).toMatch(/^http:\/\/localhost:8080\/console\/invite#[A-Za-z0-9_-]{43}$/);
    const b = new Browser();
    const r = await b.accept(inv.invite_url);
    expect(r.status, r.text).toBe(200);
    expect(r.body.user).toMatchObject({ email: "ada@acme.example", role: "admin" });
    expect(b.setCookie).toMatch(/^icv_console=[A-Za-z0-9_-]{43}; Path=\/console; HttpOnly; SameSite=Strict$/);
    expect(r.headers.get("cache-control")).toBe("no-store");
    const me = await b.get("/console/api/me");
    expect(me.status, me.text).toBe(200);
    expect(me.body).toMatchObject({ user: { email: "ada@acme.example", role: "admin" }, tenant: { id: acme.tenantId, name: "Acme" }, csrf_token: b.csrf });

    // single use: the same link again (another browser) is not found
    const again = new Browser();
    expectError(await again.accept(inv.invite_url), 404, "not_found");
    // a passkey made for another site is refused
    const inv2 = await invite(acme.tenantId, "eve@acme.example", "viewer");
    const token = new URL(inv2.invite_url).hash.slice(1);
    const o = await again.post("/console/api/invite/options", { token });
    const forged = await again.post("/console/api/invite/accept", { token, response: again.authenticator.register(o.body.options, "https://evil.example") });
    expectError(forged, 400, "validation_error");
  });

  it("signs in with the passkey; a replayed assertion, another site's or an unknown passkey is refused", async () => {
    const b = await person(acme.tenantId, "sam@acme.example", "developer");
    const later = new Browser();
    const o = await later.post("/console/api/sign-in/options");
    const assertion = b.authenticator.assert(o.body.options);
    const ok = await later.post("/console/api/sign-in", { response: assertion });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.user.email).toBe("sam@acme.example");
    expect((await later.get("/console/api/me")).status).toBe(200);

    const replay = new Browser();
    expectError(await replay.post("/console/api/sign-in", { response: assertion }), 401, "unauthorized");
    const o2 = await replay.post("/console/api/sign-in/options");
    expectError(await replay.post("/console/api/sign-in", { response: b.authenticator.assert(o2.body.options, "https://evil.example") }), 401, "unauthorized");
    const stranger = new SoftAuthenticator("localhost", ORIGIN);
    const o3 = await replay.post("/console/api/sign-in/options");
    expectError(await replay.post("/console/api/sign-in", { response: stranger.assert(o3.body.options) }), 401, "unauthorized");
    expectError(await replay.get("/console/api/me"), 401, "unauthorized");
  });

  it("sign-in attempts are limited per client address", async () => {
    const b = new Browser();
    let last = 0;
    for (let i = 0; i < 31; i++) last = (await b.post("/console/api/sign-in/options")).status;
    const refused = await b.post("/console/api/sign-in/options");
    expectError(refused, 429, "rate_limited");
    expect(last).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    // another address is not held back
    expect((await new Browser().post("/console/api/sign-in/options")).status).toBe(200);
  });

  it("sign out ends this session; sign out everywhere ends every session of the person", async () => {
    const one = await person(acme.tenantId, "out@acme.example", "viewer");
    const two = new Browser();
    expect((await two.signIn(one.authenticator)).status).toBe(200);
    const out = await one.post("/console/api/sign-out");
    expect(out.status, out.text).toBe(204);
    expect(one.setCookie).toMatch(/^icv_console=; Path=\/console; HttpOnly; SameSite=Strict; Max-Age=0$/);
    expect((await two.get("/console/api/me")).status).toBe(200);

    const three = new Browser();
    expect((await three.signIn(one.authenticator)).status).toBe(200);
    const all = await three.post("/console/api/sign-out-everywhere");
    expect(all.body).toEqual({ sessions_ended: 2 });
    expectError(await two.get("/console/api/me"), 401, "unauthorized");
    expectError(await three.get("/console/api/me"), 401, "unauthorized");
  });
});

describe("what a signed-in person sees and does", { timeout: 120_000 }, () => {
  it("sees a verification made through the API in its environment only, and revokes its proof with the CSRF token", async () => {
    const admin = await person(acme.tenantId, "ops@acme.example", "admin");
    const id = await verified(acme.testKey);
    const list = await admin.get("/console/api/test/verifications?limit=5");
    expect(list.status, list.text).toBe(200);
    expect(list.body.data.map((v: { id: string }) => v.id)).toContain(id);
    expect(list.body.pagination).toMatchObject({ page: 1, limit: 5 });
    expect((await admin.get(`/console/api/test/verifications/${id}`)).body).toMatchObject({ id, status: "verified" });
    // the live environment does not have it
    expectError(await admin.get(`/console/api/live/verifications/${id}`), 404, "not_found");
    expectError(await admin.get(`/console/api/staging/verifications/${id}`), 404, "not_found");

    expectError(await admin.post(`/console/api/test/proofs/${id}/revoke`, { reason: "fraud" }, { csrf: false }), 403, "forbidden");
    expect((await admin.get(`/console/api/test/verifications/${id}`)).body.status).toBe("verified");
    const csrf = admin.csrf;
    admin.csrf = "x".repeat(csrf.length);
    expectError(await admin.post(`/console/api/test/proofs/${id}/revoke`, { reason: "fraud" }), 403, "forbidden");
    admin.csrf = csrf;
    const revoked = await admin.post(`/console/api/test/proofs/${id}/revoke`, { reason: "fraud" });
    expect(revoked.status, revoked.text).toBe(200);
    expect(revoked.body).toMatchObject({ success: true, verification_id: id, status: "revoked" });
    expect((await api(stack.url, acme.testKey).get(`/api/v1/proofs/${id}/status`)).body).toMatchObject({ is_revoked: true, revoked_reason: "fraud" });
    // the public API's errors, as the public API answers them
    expectError(await admin.post("/console/api/test/proofs/ver_01ARZ3NDEKTSV4RRFFQ69G5FAV/revoke", {}), 404, "not_found");
    expectError(await admin.get("/console/api/test/verifications?limit=500"), 400, "validation_error");
  });

  it("creates a key shown once and revokes it: the revoked key is refused at once", async () => {
    const admin = await person(acme.tenantId, "keys@acme.example", "admin");
    const made = await admin.post("/console/api/live/keys");
    expect(made.status, made.text).toBe(201);
    expect(made.body.key).toMatch(/^pk_live_/);
    expect((await api(stack.url, made.body.key).get("/api/v1/verifications")).status).toBe(200);
    const keys = await admin.get("/console/api/live/keys");
    expect(keys.body.data[0]).toMatchObject({ id: made.body.id, prefix: made.body.key.slice(0, 12), revoked_at: null });
    expect(keys.text).not.toContain(made.body.key);
    // not from the test environment's console, nor another tenant's
    expectError(await admin.post(`/console/api/test/keys/${made.body.id}/revoke`), 404, "not_found");
    const stranger = await person(other.tenantId, "keys@other.example", "admin");
    expectError(await stranger.post(`/console/api/live/keys/${made.body.id}/revoke`), 404, "not_found");

    const r = await admin.post(`/console/api/live/keys/${made.body.id}/revoke`);
    expect(r.status, r.text).toBe(200);
    expectError(await api(stack.url, made.body.key).get("/api/v1/verifications"), 401, "unauthorized");
  });

  it("a viewer reads but changes nothing (403, in the audit log); a developer manages neither keys nor people", async () => {
    const admin = await person(acme.tenantId, "boss@acme.example", "admin");
    const id = await verified(acme.testKey);
    const inv = await admin.post("/console/api/users", { email: "vic@acme.example", role: "viewer" });
    expect(inv.status, inv.text).toBe(201);
    expect(inv.body.invite_url).toMatch(/\/console\/invite#/);
    const viewer = new Browser();
    expect((await viewer.accept(inv.body.invite_url)).status).toBe(200);

    expect((await viewer.get(`/console/api/test/verifications/${id}`)).status).toBe(200);
    expectError(await viewer.post(`/console/api/test/proofs/${id}/revoke`, {}), 403, "forbidden");
    expectError(await viewer.post("/console/api/test/keys"), 403, "forbidden");
    expectError(await viewer.post("/console/api/users", { email: "x@acme.example", role: "admin" }), 403, "forbidden");
    expect((await admin.get(`/console/api/test/verifications/${id}`)).body.status).toBe("verified");

    const dev = await person(acme.tenantId, "dev@acme.example", "developer");
    expectError(await dev.get("/console/api/test/keys"), 403, "forbidden");
    expectError(await dev.get("/console/api/users"), 403, "forbidden");

    const audit = await admin.get("/console/api/audit?limit=100");
    expect(audit.status, audit.text).toBe(200);
    expect(audit.body.data).toContainEqual(
      expect.objectContaining({ email: "vic@acme.example", action: `POST /console/api/test/proofs/${id}/revoke`, outcome: "denied", ip: viewer.ip }),
    );
    expect(audit.body.data).toContainEqual(
      expect.objectContaining({ email: "boss@acme.example", action: "POST /users", outcome: "ok", user_agent: expect.any(String) }),
    );
    expect(audit.body.data).toContainEqual(expect.objectContaining({ email: "vic@acme.example", action: "passkey.registered", outcome: "ok" }));
  });

  it("a revoked person's session ends at once; another tenant's session never sees this tenant's data", async () => {
    const admin = await person(acme.tenantId, "chief@acme.example", "admin");
    const leaver = await person(acme.tenantId, "leaver@acme.example", "developer");
    const me = await leaver.get("/console/api/me");
    const r = await admin.post(`/console/api/users/${me.body.user.id}/revoke`);
    expect(r.status, r.text).toBe(200);
    expectError(await leaver.get("/console/api/me"), 401, "unauthorized");
    expectError(await new Browser().signIn(leaver.authenticator), 401, "unauthorized");

    const id = await verified(acme.testKey);
    const stranger = await person(other.tenantId, "spy@other.example", "admin");
    expectError(await stranger.get(`/console/api/test/verifications/${id}`), 404, "not_found");
    expectError(await stranger.get(`/console/api/test/verifications/${id}/timeline`), 404, "not_found");
    const timeline = (await admin.get(`/console/api/test/verifications/${id}/timeline`)).body.data.map((e: { status: string }) => e.status);
    expect(timeline[0]).toBe("pending");
    expect(timeline).toContain("verified");
    expectError(await stranger.post(`/console/api/test/proofs/${id}/revoke`, {}), 404, "not_found");
    expect((await stranger.get("/console/api/test/verifications")).body.data.map((v: { id: string }) => v.id)).not.toContain(id);
    expectError(await stranger.post(`/console/api/users/${me.body.user.id}/revoke`), 404, "not_found");
    const seen = (await stranger.get("/console/api/users")).body.data.map((u: { email: string }) => u.email);
    expect(seen).toContain("spy@other.example");
    expect(seen.filter((e: string) => e.endsWith("@acme.example"))).toEqual([]);
    expect((await admin.get(`/console/api/test/verifications/${id}`)).body.status).toBe("verified");
  });

  it("the overview's counts and the search by identifier: own tenant and environment only, checked input, CSRF on the search", async () => {
    const mine = await person(acme.tenantId, "stats@acme.example", "viewer");
    const theirs = await person(other.tenantId, "stats@other.example", "viewer");
    const identifier = `counted${Date.now()}@example.com`;
    const v = await api(stack.url, acme.testKey).post("/api/v1/verifications", { type: "email", channel: "email", identifier });
    expect(v.status, v.text).toBe(201);
    const count = async (b: Browser, env: string) => (await b.get(`/console/api/${env}/stats/verifications?period=24h`)).body;
    const day = await count(mine, "test");
    expect(day).toMatchObject({ period: "24h", bucket: "hour" });
    expect(day.by_status.pending).toBeGreaterThanOrEqual(1);
    expect(day.buckets).toHaveLength(25);
    // the other tenant and the live environment count none of acme's test verifications
    expect((await count(theirs, "test")).by_status.pending ?? 0).toBe(0);
    expect((await count(mine, "live")).total).toBe(0);
    expectError(await mine.get("/console/api/test/stats/verifications?period=7d"), 400, "validation_error");

    // a viewer may search (a POST that only reads); the answer is masked; another tenant finds nothing
    const found = await mine.post("/console/api/test/search/verifications", { identifier: identifier.toUpperCase() });
    expect(found.status, found.text).toBe(200);
    expect(found.body.data.map((x: { id: string }) => x.id)).toEqual([v.body.id]);
    expect(found.body.data[0].masked_identifier).not.toContain(identifier);
    expect((await theirs.post("/console/api/test/search/verifications", { identifier })).body.data).toEqual([]);
    expectError(await mine.post("/console/api/test/search/verifications", { identifier: "x".repeat(321) }), 400, "validation_error");
    expectError(await mine.post("/console/api/test/search/verifications", { identifier: "not an identifier at all" }), 400, "invalid_identifier");
    expectError(await mine.post("/console/api/test/search/verifications", { identifier }, { csrf: false }), 403, "forbidden");
    // but a viewer still changes nothing
    expectError(await mine.post(`/console/api/test/proofs/${v.body.id}/revoke`, { reason: "fraud" }), 403, "forbidden");
  });

  it("retention: shown to every role, set by an admin or a developer (1–3650 or null), refused to a viewer and without CSRF, per tenant and environment", async () => {
    const admin = await person(acme.tenantId, "keeper@acme.example", "admin");
    const dev = await person(acme.tenantId, "keeper-dev@acme.example", "developer");
    const viewer = await person(acme.tenantId, "keeper-viewer@acme.example", "viewer");
    const theirs = await person(other.tenantId, "keeper@other.example", "admin");
    const put = (b: Browser, env: string, body: unknown, opts?: { csrf?: boolean }) => b.call("PUT", `/console/api/${env}/retention`, body, opts);
    expect((await viewer.get("/console/api/test/retention")).body).toEqual({ retention_days: null });

    const set = await put(dev, "test", { retention_days: 30 });
    expect(set.status, set.text).toBe(200);
    expect(set.body).toEqual({ retention_days: 30 });
    expect((await put(admin, "live", { retention_days: 3650 })).body).toEqual({ retention_days: 3650 });
    expect((await viewer.get("/console/api/test/retention")).body).toEqual({ retention_days: 30 });
    expect((await viewer.get("/console/api/live/retention")).body).toEqual({ retention_days: 3650 });
    // the operator's CLI reads what the console set; another tenant's setting is untouched
    expect(await adminCli(stack, "tenant", "show", "--tenant", acme.tenantId)).toEqual({
      tenant_id: acme.tenantId,
      live: { retention_days: 3650 },
      test: { retention_days: 30 },
    });
    expect((await theirs.get("/console/api/test/retention")).body).toEqual({ retention_days: null });

    for (const bad of [0, 3651, -1, 1.5, "30"]) {
      const r = await put(admin, "test", { retention_days: bad });
      expectError(r, 400, "validation_error");
      expect(JSON.stringify(r.body.error.details), String(bad)).toContain("retention_days");
    }
    expectError(await put(admin, "test", { retention_days: 7, extra: 1 }), 400, "validation_error");
    expectError(await put(admin, "test", { retention_days: 7 }, { csrf: false }), 403, "forbidden");
    expectError(await put(viewer, "test", { retention_days: 1 }), 403, "forbidden");
    expectError(await put(theirs, "prod", { retention_days: 1 }), 404, "not_found");
    expect((await admin.get("/console/api/test/retention")).body).toEqual({ retention_days: 30 });
    // null: kept until redacted
    expect((await put(admin, "test", { retention_days: null })).body).toEqual({ retention_days: null });

    const audit = (await admin.get("/console/api/audit?limit=100")).body.data;
    expect(audit).toContainEqual(expect.objectContaining({ email: "keeper-dev@acme.example", action: "PUT /test/retention", outcome: "ok" }));
    expect(audit).toContainEqual(expect.objectContaining({ email: "keeper@acme.example", action: "PUT /test/retention", outcome: "failed" }));
    expect(audit).toContainEqual(
      expect.objectContaining({ email: "keeper-viewer@acme.example", action: "PUT /console/api/test/retention", outcome: "denied", ip: viewer.ip }),
    );
  });
});
