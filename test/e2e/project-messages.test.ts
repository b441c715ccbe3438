// A tenant's project templates in the messages that really leave the service, with live keys:
// the code email at a real SMTP server, the outbound SMS at the Twilio stand-in, and the bots'
// replies at the WhatsApp Cloud API and Telegram Bot API stand-ins. The production clients run
// unchanged against them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, startStack, type Stack, type TenantKeys } from "../support/stack.ts";
import { startSmtp } from "../support/smtp.ts";
import { startMessagingProviders, type TelegramApi, type TwilioApi, type WhatsAppApi } from "../support/providers.ts";

const TG = { token: "7000000001:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0", bot: "icv_brand_bot", secret: "tg-webhook-secret-0123456789" };
const WA = {
  phoneNumberId: "1098765432",
  accessToken: "EAAG-e2e-access-token-0123",
  appSecret: "wa-app-secret-0123456789",
  verifyToken: "wa-verify-token-0123456789",
  number: "+15550001234",
};
const TW = { sid: "AC0123456789abcdef0123456789abcdef", token: "twilio-auth-token-0123456789", number: "+15550002000" };

let smtp: Awaited<ReturnType<typeof startSmtp>>;
let tg: TelegramApi;
let wa: WhatsAppApi;
let tw: TwilioApi;
let stack: Stack;
let t: TenantKeys;
let live: ReturnType<typeof api>;
let projectId: string;
const hook = (p: string) => `${stack.url}/hooks/${p}`;

/** A raw MIME message with quoted-printable soft breaks and escapes undone (enough to read our ASCII parts). */
const readable = (raw: string) => raw.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));

beforeAll(async () => {
  smtp = await startSmtp();
  let env: Record<string, string>;
  ({ tg, wa, tw, env } = await startMessagingProviders({ tg: TG, wa: WA, tw: TW }));
  stack = await startStack({
    SMTP_URL: smtp.url,
    SMTP_FROM: "ICV <codes@icv.test>",
    ...env,
  });
  t = await stack.tenant("Branded");
  live = api(stack.url, t.liveKey);
  const p = await live.post("/api/v1/me/projects", {
    name: "Acme",
    branding: { business_name: "Acme Shop", primary_color: "#0a7f5a", support_email: "help@acme.example" },
  });
  expect(p.status, p.text).toBe(201);
  projectId = p.body.id;
  const put = async (channel: string, type: string, body: Record<string, string>) => {
    const r = await live.put(`/api/v1/me/projects/${projectId}/templates/${channel}/${type}`, body);
    expect(r.status, r.text).toBe(200);
  };
  await put("email", "verification_request", {
    subject: "{{business_name}} code {{code}}",
    body: "<i>Hi</i> {{user_identifier}},\nyour {{business_name}} code is {{code}} ({{expires_in}}).",
  });
  await put("sms", "verification_request", { body: "{{business_name}}: {{code}} is your code" });
  await put("whatsapp", "verification_success", { body: "Acme says thanks, your {{channel}} number is confirmed." });
  await put("telegram", "verification_success", { body: "Acme: phone confirmed via {{channel}}." });
  await put("whatsapp", "login_success", { body: "Acme: login confirmed. Questions? {{support_email}}" });
});
afterAll(async () => {
  await stack?.close();
  await smtp?.close();
  await Promise.all([tg?.close(), wa?.close(), tw?.close()]);
});

describe("project templates reach the providers", () => {
  it("mails the tenant's text (escaped HTML, business name as sender) to the SMTP server; its code verifies", async () => {
    const v = await live.post("/api/v1/verifications", {
      type: "email",
      channel: "email",
      identifier: "jane.doe@example.com",
      project_id: projectId,
    });
    expect(v.status, v.text).toBe(201);
    const mail = readable((await smtp.waitFor("jane.doe@example.com")).raw);
    expect(mail).toMatch(/^From: Acme Shop <codes@icv\.test>/m);
    const code = /^Subject: Acme Shop code ([A-Z0-9]{6})/m.exec(mail)?.[1];
    expect(code).toBeDefined();
    expect(mail).toContain(`<i>Hi</i> j***e@example.com,\r\nyour Acme Shop code is ${code} (30 minutes).`);
    expect(mail).toContain(`&#60;i&#62;Hi&#60;/i&#62; j***e@example.com,<br>your Acme Shop code is ${code} (30 minutes).`);
    expect(mail).toContain("color:#0a7f5a");
    expect(mail).toContain("help@acme.example");
    const ok = await live.post(`/api/v1/verifications/${v.body.id}/submit`, { challenge_code: code });
    expect(ok.body.status).toBe("verified");
  });

  it("without a template of its own the built-in email carries the project's branding", async () => {
    const p = await live.post("/api/v1/me/projects", {
      name: "Plain",
      branding: { business_name: "Plain Co", support_email: "support@plain.example" },
    });
    await live.post("/api/v1/verifications", { type: "email", channel: "email", identifier: "builtin@example.com", project_id: p.body.id });
    const mail = readable((await smtp.waitFor("builtin@example.com")).raw);
    expect(mail).toMatch(/^From: Plain Co <codes@icv\.test>/m);
    expect(mail).toMatch(/^Subject: Plain Co: Your verification code: [A-Z0-9]{6}/m);
    expect(mail).toContain("Questions? Write to support@plain.example");
  });

  it("sends the tenant's SMS text (with the one-time-code line) to Twilio; the code in it verifies", async () => {
    const v = await live.post("/api/v1/verifications", {
      type: "phone",
      channel: "sms",
      identifier: "+37069155501",
      delivery: "outbound",
      project_id: projectId,
    });
    expect(v.status, v.text).toBe(201);
    const sms = await tw.waitForSent((m) => m.to === "+37069155501");
    const code = /^Acme Shop: ([A-Z0-9]{6}) is your code\n\n@[\w.-]+ #\1$/.exec(sms.body)?.[1];
    expect(code, sms.body).toBeDefined();
    expect((await live.post(`/api/v1/verifications/${v.body.id}/submit`, { challenge_code: code })).body.status).toBe("verified");
  });

  it("the WhatsApp bot replies with the project's verification_success text (reverse OTP)", async () => {
    const v = await live.post("/api/v1/verifications", {
      type: "phone",
      channel: "whatsapp",
      identifier: "+37069155502",
      project_id: projectId,
    });
    expect(v.status, v.text).toBe(201);
    await wa.userSends(hook("whatsapp"), { from: "37069155502", text: v.body.challenge.code });
    expect((await wa.waitForSent((m) => m.to === "37069155502")).text).toBe("Acme says thanks, your whatsapp number is confirmed.");
    // a verification of the default project (no template) gets the built-in reply
    const d = await live.post("/api/v1/verifications", { type: "phone", channel: "whatsapp", identifier: "+37069155503" });
    await wa.userSends(hook("whatsapp"), { from: "37069155503", text: d.body.challenge.code });
    expect((await wa.waitForSent((m) => m.to === "37069155503")).text).toMatch(/^Thank you, your phone number is verified/);
  });

  it("a phone-first Telegram session with project_id ends with the project's reply", async () => {
    const s = await live.post("/api/v1/sessions", { channel: "telegram", project_id: projectId });
    expect(s.status, s.text).toBe(201);
    const token = new URL(s.body.deep_link).searchParams.get("start")!;
    const user = { userId: 770001, firstName: "Ona" };
    await tg.userSends(hook("telegram"), tg.textUpdate(user, `/start ${token}`));
    await tg.waitForSent((c) => c.method === "sendMessage" && c.body.chat_id === user.userId);
    await tg.userSends(hook("telegram"), tg.contactUpdate(user, "+37069155504"));
    const reply = await tg.waitForSent((c) => c.method === "sendMessage" && c.body.chat_id === user.userId && /Acme/.test(String(c.body.text)));
    expect(reply.body.text).toBe("Acme: phone confirmed via telegram.");
    expect((await live.get(`/api/v1/sessions/${s.body.id}`)).body.status).toBe("verified");
  });

  it("without templates of its own the bots' built-in replies carry the project's business name", async () => {
    const p = await live.post("/api/v1/me/projects", { name: "Plain bots", branding: { business_name: "Plain Bots Co" } });
    expect(p.status, p.text).toBe(201);
    // reverse OTP: a wrong sender first, then the number itself
    const v = await live.post("/api/v1/verifications", {
      type: "phone",
      channel: "whatsapp",
      identifier: "+37069155506",
      project_id: p.body.id,
    });
    expect(v.status, v.text).toBe(201);
    await wa.userSends(hook("whatsapp"), { from: "37069155507", text: v.body.challenge.code });
    expect((await wa.waitForSent((m) => m.to === "37069155507")).text).toMatch(/^Plain Bots Co: This code was issued for a different phone number\./);
    await wa.userSends(hook("whatsapp"), { from: "37069155506", text: v.body.challenge.code });
    expect((await wa.waitForSent((m) => m.to === "37069155506")).text).toBe(
      "Plain Bots Co: Thank you, your phone number is verified. You can go back to the app now.",
    );
    // a login auth session of the project
    const s = await live.post("/api/v1/auth/sessions", {
      channel: "whatsapp",
      phone_number: "+37069155508",
      type: "login",
      project_id: p.body.id,
    });
    expect(s.status, s.text).toBe(201);
    await wa.userSends(hook("whatsapp"), { from: "37069155508", text: new URL(s.body.deep_link).searchParams.get("text")! });
    expect((await wa.waitForSent((m) => m.to === "37069155508")).text).toBe("Plain Bots Co: Thank you, confirmed. You can go back to the app now.");
  });

  it("a WhatsApp login auth session replies with the project's login_success text", async () => {
    const s = await live.post("/api/v1/auth/sessions", {
      channel: "whatsapp",
      phone_number: "+37069155505",
      type: "login",
      project_id: projectId,
    });
    expect(s.status, s.text).toBe(201);
    await wa.userSends(hook("whatsapp"), { from: "37069155505", text: new URL(s.body.deep_link).searchParams.get("text")! });
    expect((await wa.waitForSent((m) => m.to === "37069155505")).text).toBe("Acme: login confirmed. Questions? help@acme.example");
  });
});
