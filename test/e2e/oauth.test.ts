// Social accounts and coinbase by OAuth 2.0 sign-in, kraken by a read-only API key, with live
// keys against local stand-ins that speak each provider's protocol (authorization code + PKCE,
// client secret, the provider's user JSON, OIDC id_tokens for Google and LinkedIn) and Kraken's
// signed private API. The test plays the browser: it follows the deep link to the stand-in and
// back to the callback, and reads the page the end user sees.
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import http from "node:http";
import type net from "node:net";
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "@icv/platform";
import { expectError } from "../support/expect-error.ts";
import { freePort } from "../support/private-servers.ts";
import { api, startStack, type Stack, type TenantKeys } from "../support/stack.ts";
import { startKrakenApi, startOAuthProvider, type KrakenStandIn, type OAuthProviderName, type OAuthStandIn } from "../support/oauth-providers.ts";

/** Per provider: the type, the identifier a tenant gives, and the account the provider answers for it. */
const CASES: [OAuthProviderName, "social" | "account", string, { id: string; handle: string }][] = [
  ["github", "social", "@OctoCat", { id: "583231", handle: "octocat" }],
  ["google", "social", "Jane.Doe@Example.com", { id: "110248495921238986420", handle: "jane.doe@example.com" }],
  ["facebook", "social", "10158000000000001", { id: "10158000000000001", handle: "Jane Doe" }],
  ["x", "social", "@Jack", { id: "12", handle: "jack" }],
  ["linkedin", "social", "pat@example.org", { id: "782bbtaQ", handle: "pat@example.org" }],
  ["instagram", "social", "insta.user", { id: "17841400000000000", handle: "insta.user" }],
  ["youtube", "social", "@StandInChannel", { id: "UC_x5XG1OV2P6uZZ5FSM9Ttw", handle: "@standinchannel" }],
  ["tiktok", "social", "tok_user", { id: "723f24d7-e717-40f8-a2b6-cb8464cd23b4", handle: "tok_user" }],
  ["coinbase", "account", "Trader@Example.com", { id: "9da7a204-544e-5fd1-9a12-61176c5d4cd8", handle: "trader@example.com" }],
];
const IIBAN = "AA88 N84G WOAK NMOI";

const clock = new ManualClock(Date.now());
const logs: string[] = [];
const stands = {} as Record<OAuthProviderName, OAuthStandIn>;
let kraken: KrakenStandIn;
let stack: Stack;
let t: TenantKeys;
let other: TenantKeys;
let live: ReturnType<typeof api>;

beforeAll(async () => {
  const started = await Promise.all(CASES.map(([name]) => startOAuthProvider(name)));
  for (const s of started) stands[s.name] = s;
  kraken = await startKrakenApi();
  const port = await freePort();
  stack = await startStack(
    {
      PORT: String(port),
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      ALLOW_PRIVATE_TARGETS: "true",
      KRAKEN_API_URL: kraken.url,
      LOG_LEVEL: "debug",
      ...Object.assign({}, ...started.map((s) => s.env)),
    },
    clock,
    { logTo: { write: (line: string) => void logs.push(line) } },
  );
  t = await stack.tenant("OAuth");
  other = await stack.tenant("Other");
  live = api(stack.url, t.liveKey);
});
afterAll(async () => {
  await stack?.close();
  await Promise.all([...Object.values(stands).map((s) => s.close()), kraken?.close()]);
});

const outcomeOf = (html: string) => /data-outcome="([a-z_]+)"/.exec(html)?.[1];
const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

async function create(client: ReturnType<typeof api>, type: string, channel: string, identifier: string) {
  const r = await client.post("/api/v1/verifications", { type, channel, identifier });
  expect(r.status, r.text).toBe(201);
  return r.body;
}

/**
 * The browser's part: the deep link (303 to the provider), the provider's authorization page (302
 * back with a code), the callback (the page). `tamper` may change the authorization request.
 */
async function signIn(deepLink: string, tamper?: (authorize: URL) => void) {
  const start = await fetch(deepLink, { redirect: "manual" });
  if (start.status !== 303)
    return {
      stage: "start",
      status: start.status,
      html: await start.text(),
      outcome: undefined as string | undefined,
      callback: undefined,
    };
  const authorize = new URL(start.headers.get("location")!);
  tamper?.(authorize);
  const back = await fetch(authorize, { redirect: "manual" });
  expect(back.status).toBe(302);
  const callback = new URL(back.headers.get("location")!);
  const page = await fetch(callback, { redirect: "manual" });
  const html = await page.text();
  return { stage: "callback", status: page.status, html, outcome: outcomeOf(html), callback, authorize };
}

describe("OAuth sign-in with a live key, every provider", () => {
  it.each(CASES)("%s: the right account completes it, with method oauth and subject_hash", async (name, type, identifier, account) => {
    const v = await create(live, type, name, identifier);
    expect(v.challenge.deep_link).toMatch(new RegExp(`^${stack.url.replace(/\./g, "\\.")}/oauth/${name}/start\\?t=ver_`));
    stands[name].account = account;
    const r = await signIn(v.challenge.deep_link);
    expect(r.status, r.html).toBe(200);
    expect(r.outcome).toBe("verified");
    expect(r.html).toContain("The account is verified");
    const got = (await live.get(`/api/v1/verifications/${v.id}`)).body;
    expect(got).toMatchObject({ status: "verified", method: "oauth" });
    const claims = decodeJwt(got.proof.token);
    expect(claims).toMatchObject({ method: "oauth", type, channel: name, subject_hash: sha256(`${name}:${account.id}`) });
    const valid = await live.post("/api/v1/proofs/validate", { proof_token: got.proof.token, identifier });
    expect(valid.body.valid).toBe(true);
  });

  it("a live create on a provider without a client secret is channel_unavailable (test keys still work)", async () => {
    const bare = await startStack({ OAUTH_GITHUB_CLIENT_ID: "only-the-id" });
    try {
      const k = await bare.tenant("Bare");
      const e = expectError(
        await api(bare.url, k.liveKey).post("/api/v1/verifications", { type: "social", channel: "github", identifier: "octocat" }),
        400,
        "channel_unavailable",
      );
      expect(e.message).toContain("OAUTH_GITHUB_CLIENT_SECRET");
      expect((await api(bare.url, k.testKey).post("/api/v1/verifications", { type: "social", channel: "github", identifier: "octocat" })).status).toBe(201);
    } finally {
      await bare.close();
    }
  });
});

describe("OAuth sign-in: what goes wrong", () => {
  it("another account: a failed attempt shown on the page (identifier_mismatch), a fresh link, then the right one verifies", async () => {
    const v = await create(live, "social", "github", "octocat");
    stands.github.account = { id: "999", handle: "not-octocat" };
    const wrong = await signIn(v.challenge.deep_link);
    expect(wrong.status).toBe(200);
    expect(wrong.outcome).toBe("mismatch");
    expect(wrong.html).toContain("identifier_mismatch");
    expect(wrong.html).toContain("4 attempts left");
    const after = (await live.get(`/api/v1/verifications/${v.id}`)).body;
    expect(after).toMatchObject({ status: "pending", attempts: 1 });
    // the spent link never works again; the page's retry link does
    expect((await signIn(v.challenge.deep_link)).html).toContain("not valid");
    const retry = /id="retry" href="([^"]+)"/.exec(wrong.html)![1].replace(/&#38;/g, "&");
    expect(after.challenge.deep_link).toBe(retry);
    stands.github.account = { id: "583231", handle: "OctoCat" };
    expect((await signIn(retry)).outcome).toBe("verified");
  });

  it("five wrong accounts fail the verification", async () => {
    const v = await create(live, "social", "x", "jack");
    stands.x.account = { id: "13", handle: "jill" };
    let link = v.challenge.deep_link;
    for (let i = 1; i <= 5; i++) {
      const r = await signIn(link);
      expect(r.outcome).toBe(i < 5 ? "mismatch" : "failed");
      if (i < 5) link = /id="retry" href="([^"]+)"/.exec(r.html)![1].replace(/&#38;/g, "&");
    }
    expect((await live.get(`/api/v1/verifications/${v.id}`)).body.status).toBe("failed");
  });

  it("a tampered state is refused and changes nothing", async () => {
    const v = await create(live, "social", "github", "tamper-me");
    stands.github.account = { id: "77", handle: "tamper-me" };
    const start = await fetch(v.challenge.deep_link, { redirect: "manual" });
    const back = await fetch(start.headers.get("location")!, { redirect: "manual" });
    const cb = new URL(back.headers.get("location")!);
    const state = cb.searchParams.get("state")!;
    cb.searchParams.set("state", state.slice(0, -2) + (state.endsWith("AA") ? "BB" : "AA"));
    const page = await fetch(cb);
    expect(page.status).toBe(200);
    expect(outcomeOf(await page.text())).toBe("invalid_link");
    expect((await live.get(`/api/v1/verifications/${v.id}`)).body).toMatchObject({ status: "pending", attempts: 0 });
    // no state at all, and another channel's callback path, are refused too
    cb.searchParams.set("state", state);
    const wrongPath = new URL(cb.href.replace("/oauth/github/", "/oauth/x/"));
    expect(outcomeOf(await (await fetch(wrongPath)).text())).toBe("invalid_link");
  });

  it("a start link works once, and only on its own channel", async () => {
    const v = await create(live, "social", "github", "once-only");
    const onX = v.challenge.deep_link.replace("/oauth/github/", "/oauth/x/");
    expect(outcomeOf(await (await fetch(onX)).text())).toBe("invalid_link");
    expect((await fetch(v.challenge.deep_link, { redirect: "manual" })).status).toBe(303);
    const again = await fetch(v.challenge.deep_link, { redirect: "manual" });
    expect(again.status).toBe(200);
    expect(outcomeOf(await again.text())).toBe("invalid_link");
    const forged = v.challenge.deep_link.replace(/\.[0-9a-f]{64}$/, `.${"0".repeat(64)}`);
    expect(outcomeOf(await (await fetch(forged)).text())).toBe("invalid_link");
  });

  it("an expired verification: the link shows it, and so does a callback that comes back too late", async () => {
    const a = await create(live, "social", "github", "late-start");
    const b = await create(live, "social", "github", "late-callback");
    stands.github.account = { id: "78", handle: "late-callback" };
    const start = await fetch(b.challenge.deep_link, { redirect: "manual" });
    const back = await fetch(start.headers.get("location")!, { redirect: "manual" });
    clock.advance(11 * 60_000);
    const late = await fetch(back.headers.get("location")!);
    expect(outcomeOf(await late.text())).toBe("invalid_link"); // the state ran out with the challenge
    expect((await live.get(`/api/v1/verifications/${b.id}`)).body.status).toBe("expired");
    const r = await fetch(a.challenge.deep_link, { redirect: "manual" });
    expect(outcomeOf(await r.text())).toBe("expired");
  });

  it("the provider failing the token exchange: nothing verified, no attempt spent, a fresh link", async () => {
    const v = await create(live, "social", "google", "err@example.com");
    stands.google.account = { id: "5", handle: "err@example.com" };
    stands.google.tokenError = { status: 503, error: "temporarily_unavailable" };
    try {
      const r = await signIn(v.challenge.deep_link);
      expect(r.outcome).toBe("provider_error");
      expect(r.html).toContain('id="retry"');
    } finally {
      stands.google.tokenError = undefined;
    }
    expect((await live.get(`/api/v1/verifications/${v.id}`)).body).toMatchObject({ status: "pending", attempts: 0 });
  });

  it("a PKCE verifier that does not match the challenge is refused by the provider", async () => {
    const v = await create(live, "social", "linkedin", "pkce@example.org");
    stands.linkedin.account = { id: "6", handle: "pkce@example.org" };
    const refusedBefore = stands.linkedin.refused.length;
    const r = await signIn(v.challenge.deep_link, (u) => u.searchParams.set("code_challenge", createHash("sha256").update("attacker").digest("base64url")));
    expect(r.outcome).toBe("provider_error");
    expect(stands.linkedin.refused.slice(refusedBefore)).toEqual(["pkce"]);
    expect((await live.get(`/api/v1/verifications/${v.id}`)).body.status).toBe("pending");
  });

  it("the user cancelling at the provider counts no attempt", async () => {
    const v = await create(live, "social", "facebook", "10158000000000002");
    stands.facebook.authorizeError = "access_denied";
    try {
      expect((await signIn(v.challenge.deep_link)).outcome).toBe("denied");
    } finally {
      stands.facebook.authorizeError = undefined;
    }
    expect((await live.get(`/api/v1/verifications/${v.id}`)).body).toMatchObject({ status: "pending", attempts: 0 });
  });

  it("tenants are isolated: one tenant's sign-in verifies only its own verification", async () => {
    const mine = await create(live, "social", "github", "shared-handle");
    const theirs = await create(api(stack.url, other.liveKey), "social", "github", "shared-handle");
    stands.github.account = { id: "4242", handle: "shared-handle" };
    expect((await signIn(mine.challenge.deep_link)).outcome).toBe("verified");
    expect((await api(stack.url, other.liveKey).get(`/api/v1/verifications/${theirs.id}`)).body.status).toBe("pending");
    expectError(await api(stack.url, other.liveKey).get(`/api/v1/verifications/${mine.id}`), 404, "not_found");
  });

  it("a request's sign-in goes back to its redirect_url once the request is completed", async () => {
    const r = await live.post("/api/v1/verification-requests", {
      assets: [{ type: "social", channel: "tiktok", identifier: "tok_request" }],
      redirect_url: "https://shop.example.test/done",
    });
    expect(r.status, r.text).toBe(201);
    const v = (await live.get(`/api/v1/verifications/${r.body.assets[0].verification_id}`)).body;
    stands.tiktok.account = { id: "open-9", handle: "tok_request" };
    const page = await signIn(v.challenge.deep_link);
    expect(page.outcome).toBe("verified");
    const back = /id="continue" href="([^"]+)"/.exec(page.html)![1].replace(/&#38;/g, "&");
    expect(back).toBe(`https://shop.example.test/done?request_id=${r.body.id}&status=completed`);
    expect(page.html).toContain('http-equiv="refresh"');
  });
});

describe("kraken: a read-only API key", () => {
  it("completes with a key of the named account (method api_key); Kraken's signature check passes", async () => {
    const v = await create(live, "account", "kraken", IIBAN.toLowerCase());
    expect(v.identifier).toBe(IIBAN);
    expect(v.challenge.deep_link).toBeUndefined();
    const key = kraken.addKey(IIBAN);
    const r = await live.post(`/api/v1/verifications/${v.id}/submit`, { api_key: key.key, api_secret: key.secret });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ status: "verified", method: "api_key" });
    expect(decodeJwt(r.body.proof.token)).toMatchObject({ method: "api_key", channel: "kraken" });
  });

  it("another account's key, a wrong secret and a key that can trade or withdraw are refused", async () => {
    const v = await create(live, "account", "kraken", IIBAN);
    const otherKey = kraken.addKey("AA11 BBBB CCCC DDDD");
    const wrong = expectError(
      await live.post(`/api/v1/verifications/${v.id}/submit`, { api_key: otherKey.key, api_secret: otherKey.secret }),
      400,
      "invalid_code",
    );
    expect(wrong.attempts_remaining).toBe(4);
    const mine = kraken.addKey(IIBAN);
    const badSecret = Buffer.alloc(64, 7).toString("base64");
    expectError(await live.post(`/api/v1/verifications/${v.id}/submit`, { api_key: mine.key, api_secret: badSecret }), 400, "invalid_code");
    expect(kraken.refused).toContain("EAPI:Invalid signature");
    const writer = kraken.addKey(IIBAN, ["query-funds", "withdraw-funds"]);
    const e = expectError(await live.post(`/api/v1/verifications/${v.id}/submit`, { api_key: writer.key, api_secret: writer.secret }), 400, "validation_error");
    expect(e.message).toContain("read-only");
    expect((await live.get(`/api/v1/verifications/${v.id}`)).body).toMatchObject({ status: "pending", attempts: 2 });
  });
});

describe("kraken on the hosted page", () => {
  it("the asset asks for a key (no sign-in link), the page's scripts carry the form and the read-only note, and the page's submit completes the request", async () => {
    const r = await live.post("/api/v1/verification-requests", {
      assets: [{ type: "account", channel: "kraken", identifier: IIBAN }],
      redirect_url: "https://shop.example.test/kraken-done",
    });
    expect(r.status, r.text).toBe(201);
    const token = new URL(r.body.verification_url).hash.slice(1);
    const h = { "x-request-token": token };
    const path = `/api/v1/verify/request/${r.body.id}`;
    const state = await api(stack.url).get(path, h);
    expect(state.status, state.text).toBe(200);
    expect(state.body.assets[0]).toMatchObject({ type: "account", channel: "kraken", method: "api_key" });
    expect(state.body.assets[0].challenge?.deep_link).toBeUndefined();

    // the form is data the asset carries (the page's scripts name no channel); the words of an API-key step are the page's
    expect(state.body.assets[0].forms.kraken).toMatchObject({
      step: "api_key",
      fields: [{ name: "api_key" }, { name: "api_secret", input: "password" }],
    });
    const texts = await (await fetch(`${stack.url}/hosted/texts.js`)).text();
    for (const part of ["Query Funds", "read-only API key", "never store it"]) expect(texts).toContain(part);

    const wrong = kraken.addKey("AA22 BBBB CCCC DDDD");
    expectError(await api(stack.url).post(`${path}/assets/0/submit`, { api_key: wrong.key, api_secret: wrong.secret }, h), 400, "invalid_code");
    const key = kraken.addKey(IIBAN);
    const done = await api(stack.url).post(`${path}/assets/0/submit`, { api_key: key.key, api_secret: key.secret }, h);
    expect(done.status, done.text).toBe(200);
    expect(done.body).toMatchObject({ status: "completed", assets: [{ status: "verified" }] });
    expect(done.body.redirect_to).toBe(`https://shop.example.test/kraken-done?request_id=${r.body.id}&status=completed`);
    expect(done.text).not.toContain(key.secret);
    const v = (await live.get(`/api/v1/verifications/${r.body.assets[0].verification_id}`)).body;
    expect(v).toMatchObject({ status: "verified", method: "api_key", attempts: 1 });
  });
});

describe("test keys", () => {
  const channels = [...CASES.map(([name, type]) => [name, type] as const), ["kraken", "account"] as const];
  it.each(channels)("%s: the start link shows a test page, and test-verify completes it", async (channel, type) => {
    const c = api(stack.url, t.testKey);
    const identifier = channel === "kraken" ? IIBAN : CASES.find(([n]) => n === channel)![2];
    const v = await create(c, type, channel, identifier);
    if (v.challenge.deep_link) {
      const page = await fetch(v.challenge.deep_link, { redirect: "manual" });
      expect(page.status).toBe(200);
      expect(outcomeOf(await page.text())).toBe("test_mode");
    }
    const done = await c.post(`/api/v1/verifications/${v.id}/test-verify`);
    expect(done.status, done.text).toBe(200);
    expect(done.body).toMatchObject({ status: "verified", test_mode: true });
  });
});

const CHROMIUM = "/usr/bin/chromium";
const BROWSER_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

describe.skipIf(!existsSync(CHROMIUM))(
  `the hosted page in Chromium${existsSync(CHROMIUM) ? "" : " (skipped: /usr/bin/chromium is absent; .ci/run installs it)"}`,
  () => {
    it("signs in with GitHub from the hosted page (wrong account first), then goes back to the tenant's site", {
      timeout: 90_000,
    }, async () => {
      const { chromium } = await import("playwright-core");
      const visits: string[] = [];
      const site = http.createServer((req, res) => {
        visits.push(req.url ?? "");
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end("<!doctype html><title>Back at the shop</title><h1>Back at the shop</h1>");
      });
      await new Promise<void>((r) => site.listen(0, "127.0.0.1", r));
      const siteUrl = `http://127.0.0.1:${(site.address() as net.AddressInfo).port}`;
      const browser = await chromium.launch({ executablePath: CHROMIUM, args: BROWSER_ARGS });
      try {
        const r = await live.post("/api/v1/verification-requests", {
          assets: [
            { type: "social", channel: "github" },
            { type: "account", channel: "kraken", identifier: IIBAN },
          ],
          action_context: { title: "Show us your accounts" },
          redirect_url: `${siteUrl}/done`,
        });
        expect(r.status, r.text).toBe(201);
        const tab = await browser.newPage({ viewport: { width: 1280, height: 900 } });
        const violations: string[] = [];
        tab.on("console", (m) => {
          if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
        });
        await tab.goto(r.body.verification_url);
        const gh = tab.locator("#asset-0");
        await gh.getByLabel("Your username").fill("octo-page");
        await gh.getByRole("button", { name: "Start" }).click();

        // a wrong account first: the page the provider sends the user back to says so, and offers a fresh link
        stands.github.account = { id: "31337", handle: "someone-else" };
        await gh.getByRole("link", { name: "Sign in with GitHub" }).click();
        await tab.getByRole("heading", { level: 1, name: "Wrong account" }).waitFor();
        expect(await tab.locator("#outcome").textContent()).toContain("identifier_mismatch");
        expect(await tab.evaluate(() => location.pathname)).toBe("/oauth/github/callback");

        // the right account, from the retry link: verified, and back to the hosted page (the request is not complete yet)
        stands.github.account = { id: "4040", handle: "Octo-Page" };
        await tab.getByRole("link", { name: "Sign in with GitHub again" }).click();
        await tab.getByRole("heading", { level: 1, name: "Verified" }).waitFor();
        await tab.getByRole("link", { name: "Continue" }).click();
        await tab.getByRole("heading", { level: 1, name: "Show us your accounts" }).waitFor();
        await expect.poll(() => gh.locator(".status").textContent()).toBe("Verified");

        // Kraken: the API-key form, a key of the named account; then the request completes and the page goes to the site
        const kr = tab.locator("#asset-1");
        expect(await kr.textContent()).toContain("read-only API key");
        const key = kraken.addKey(IIBAN);
        await kr.getByLabel("API key").fill(key.key);
        await kr.getByLabel("Private key (secret)").fill(key.secret);
        await kr.getByRole("button", { name: "Confirm" }).click();
        await tab.waitForURL((u) => u.origin === siteUrl, { timeout: 15_000 });
        expect(new URL(tab.url()).searchParams.get("status")).toBe("completed");
        expect(violations).toEqual([]);
        const v = (await live.get(`/api/v1/verification-requests/${r.body.id}`)).body;
        expect(v.status).toBe("completed");
      } finally {
        await browser.close();
        site.close();
      }
    });
  },
);

describe("logs", () => {
  it("hold no provider token, code, state, link secret or Kraken secret", () => {
    const text = logs.join("");
    expect(text).toContain("oauth sign-in started");
    const secrets = Object.values(stands).flatMap((s) => [...s.issued, s.clientSecret]);
    expect(secrets.length).toBeGreaterThan(10);
    for (const s of secrets) expect(text).not.toContain(s);
    expect(text).not.toMatch(/[?&](code|state|t)=/);
    expect(text).not.toMatch(/ver_[0-9A-Z]{26}\.[0-9a-f]{64}/);
  });
});
