// Viber as a messaging provider, through the Viber REST bot API stand-in (send_message,
// set_webhook, callbacks signed with X-Viber-Content-Signature): a phone-first session opened by
// the deep link's context and completed by the contact the share-phone button shares, the
// reverse-OTP phone channel (the code as the context, the contact's number must be the
// verification's own), forged and unsigned callbacks refused, and test mode (test-verify, the
// test inbox). The production client runs unchanged against the stand-in.
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "@icv/platform";
import { api, startStack, type Stack, type TenantKeys } from "../support/stack.ts";
import { waitFor } from "../support/expect-error.ts";
import { startViberApi, type ViberApi } from "../support/providers.ts";

const PUBLIC = "https://verify.example.test";
const VB = { uri: "icv-e2e-bot", token: "4453b6ac12345678-e02c5f12174805f9-daec6fa3d34a2f1e" };

let vb: ViberApi;
let stack: Stack;
let t: TenantKeys;
let live: ReturnType<typeof api>;
let test: ReturnType<typeof api>;
const clock = new ManualClock(Date.now());
let hook: string;
let users = 0;
const user = () => ({ id: `vbUser${++users}AAAAAAAA==`, name: "Viber Tester" });

beforeAll(async () => {
  vb = await startViberApi({ authToken: VB.token });
  stack = await startStack(
    { PUBLIC_BASE_URL: PUBLIC, ALLOW_PRIVATE_TARGETS: "true", VIBER_API_URL: vb.url, VIBER_BOT_URI: VB.uri, VIBER_AUTH_TOKEN: VB.token },
    clock,
  );
  t = await stack.tenant("Viber");
  live = api(stack.url, t.liveKey);
  test = api(stack.url, t.testKey);
  hook = `${stack.url}/hooks/viber`;
});
afterAll(async () => {
  await stack?.close();
  await vb?.close();
});

const contextOf = (link: string) => {
  const u = new URL(link);
  expect(`${u.protocol}//${u.host}`).toBe("viber://pa");
  expect(u.searchParams.get("chatURI")).toBe(VB.uri);
  return u.searchParams.get("context")!;
};

describe("the bot", () => {
  it("points Viber at its hook at start (set_webhook)", async () => {
    await waitFor(async () => vb.webhooks.includes(`${PUBLIC}/hooks/viber`) || undefined, 5_000);
  });
});

describe("phone-first sessions on viber", () => {
  it("the deep link's context opens the chat, the welcome asks for the phone, the shared contact verifies it with a proof", async () => {
    const s = await live.post("/api/v1/sessions", { channel: "viber", client_metadata: { cart: "v-1" } });
    expect(s.status, s.text).toBe(201);
    expect(s.body).toMatchObject({ channel: "viber", status: "pending" });
    expect(s.body.instructions).toContain(VB.uri);
    const context = contextOf(s.body.deep_link);
    expect(context).toMatch(/^[A-Za-z0-9_-]{22}$/);

    const u = user();
    const opened = await vb.opens(hook, u, context);
    expect(opened.status).toBe(200);
    expect(opened.welcome).toMatchObject({ receiver: u.id, sharePhone: "Share my phone number" });
    expect(opened.welcome!.text).toMatch(/share your phone number/);
    expect((await live.get(`/api/v1/sessions/${s.body.id}`)).body.status).toBe("pending");

    expect((await vb.sharesPhone(hook, u, "+37069100011")).status).toBe(200);
    const got = (await live.get(`/api/v1/sessions/${s.body.id}`)).body;
    expect(got).toMatchObject({ status: "verified", phone_number: "+37069100011", client_metadata: { cart: "v-1" } });
    expect(decodeJwt(got.proof.token)).toMatchObject({ type: "phone", channel: "viber", env: "live" });
    const reply = await vb.waitForSent((m) => m.receiver === u.id);
    expect(reply.text).toMatch(/confirmed/i);
    expect(reply.authToken).toBe(VB.token);
  });

  it("refuses forged and unsigned callbacks (401) and changes nothing", async () => {
    const s = (await live.post("/api/v1/sessions", { channel: "viber" })).body;
    const u = user();
    expect((await vb.opens(hook, u, contextOf(s.deep_link), { signWith: "not-the-auth-token-0123456789" })).status).toBe(401);
    expect((await vb.opens(hook, u, contextOf(s.deep_link), { signWith: null })).status).toBe(401);
    expect((await vb.opens(hook, u, contextOf(s.deep_link))).status).toBe(200);
    const forged = await vb.sharesPhone(hook, u, "+37069100012", { signWith: "not-the-auth-token-0123456789" });
    expect([forged.status, JSON.parse(forged.body).error.code]).toEqual([401, "unauthorized"]);
    expect((await live.get(`/api/v1/sessions/${s.id}`)).body.status).toBe("pending");
    // a contact without an open conversation is told to start from the link
    const stranger = user();
    expect((await vb.sharesPhone(hook, stranger, "+37069100013")).status).toBe(200);
    expect((await vb.waitForSent((m) => m.receiver === stranger.id)).text).toMatch(/Open the link/);
  });
});

describe("reverse OTP on viber", () => {
  it("only the contact of the verification's own number verifies it; another number is a wrong_sender strike", async () => {
    const v = await live.post("/api/v1/verifications", { type: "phone", channel: "viber", identifier: "+37069100021" });
    expect(v.status, v.text).toBe(201);
    const code = v.body.challenge.code as string;
    expect(code).toMatch(/^[A-Z0-9]{6}$/);
    expect(contextOf(v.body.challenge.deep_link)).toBe(code);

    const wrong = user();
    expect((await vb.opens(hook, wrong, code)).welcome?.sharePhone).toBe("Share my phone number");
    expect((await vb.sharesPhone(hook, wrong, "+37069100022")).status).toBe(200);
    expect((await live.get(`/api/v1/verifications/${v.body.id}`)).body).toMatchObject({ status: "pending", attempts: 1 });
    expect((await vb.waitForSent((m) => m.receiver === wrong.id)).text).toMatch(/different phone number/);

    // a forged callback with the right number verifies nothing
    const me = user();
    expect((await vb.opens(hook, me, code)).status).toBe(200);
    expect((await vb.sharesPhone(hook, me, "+37069100021", { signWith: null })).status).toBe(401);
    expect((await live.get(`/api/v1/verifications/${v.body.id}`)).body.status).toBe("pending");

    expect((await vb.sharesPhone(hook, me, "+37069100021")).status).toBe(200);
    const got = (await live.get(`/api/v1/verifications/${v.body.id}`)).body;
    expect(got).toMatchObject({ status: "verified", channel: "viber", identifier: "+37069100021" });
    expect(decodeJwt(got.proof.token)).toMatchObject({ method: "reverse_otp" });
    expect((await vb.waitForSent((m) => m.receiver === me.id)).text).toMatch(/verified/);
  });
});

describe("test mode", () => {
  it("test-verify completes a viber session, and the test inbox holds the message it expects", async () => {
    const s = (await test.post("/api/v1/sessions", { channel: "viber" })).body;
    const r = await test.post(`/api/v1/sessions/${s.id}/test-verify`, { phone_number: "+37069100031" });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ status: "verified", phone_number: "+37069100031", test_mode: true });
    const v = await test.post("/api/v1/verifications", { type: "phone", channel: "viber", identifier: "+37069100032" });
    expect(v.status, v.text).toBe(201);
    const inbox = (await test.get(`/api/v1/test/messages?verification_id=${v.body.id}`)).body.data;
    expect(inbox[0]).toMatchObject({ channel: "viber", direction: "inbound", from: "+37069100032", to: VB.uri });
    const done = await test.post(`/api/v1/verifications/${v.body.id}/test-verify`);
    expect(done.status, done.text).toBe(200);
    expect(done.body.status).toBe("verified");
    // nothing reached the bot API in test mode
    expect(vb.sent.filter((m) => m.text.includes(v.body.challenge.code))).toEqual([]);
  });
});
