import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, startStack, type Stack, type TenantKeys } from "../support/stack.ts";
import { startSmtp } from "../support/smtp.ts";

let smtp: Awaited<ReturnType<typeof startSmtp>>;
let stack: Stack;
let t: TenantKeys;

beforeAll(async () => {
  smtp = await startSmtp();
  stack = await startStack({ SMTP_URL: smtp.url, SMTP_FROM: "ICV <codes@icv.test>" });
  t = await stack.tenant("Mail");
});
afterAll(async () => {
  await stack?.close();
  await smtp?.close();
});

const codeIn = (raw: string) => /verification code is (?:<\/p><p[^>]*>)?\s*([A-Z0-9]{6})/.exec(raw)?.[1];

describe("email verification over a real SMTP server", () => {
  it("mails the code to the user (never to the caller); the right code verifies with a proof", async () => {
    const live = api(stack.url, t.liveKey);
    const created = await live.post("/api/v1/verifications", { type: "email", channel: "email", identifier: "Jane.Doe+shop@Example.COM" });
    expect(created.status).toBe(201);
    expect(created.body.identifier).toBe("jane.doe+shop@example.com");
    expect(created.body.challenge.code).toBeUndefined();
    expect(JSON.stringify(created.body)).not.toMatch(/"code"/);

    const mail = await smtp.waitFor("jane.doe+shop@example.com");
    expect(mail.from).toBe("codes@icv.test");
    const code = codeIn(mail.raw);
    expect(code).toMatch(/^[A-Z0-9]{6}$/);

    const wrong = await live.post(`/api/v1/verifications/${created.body.id}/submit`, {
      challenge_code: code === "AAAAAA" ? "BBBBBB" : "AAAAAA",
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toMatchObject({ code: "invalid_code", attempts_remaining: 4 });

    const ok = await live.post(`/api/v1/verifications/${created.body.id}/submit`, { challenge_code: code!.toLowerCase() });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ status: "verified", test_mode: false });
    expect(ok.body.proof.token.split(".")).toHaveLength(3);
  });

  it("sends nothing for a test key", async () => {
    const before = smtp.inbox.length;
    const created = await api(stack.url, t.testKey).post("/api/v1/verifications", {
      type: "email",
      channel: "email",
      identifier: "quiet@example.com",
    });
    expect(created.status).toBe(201);
    await new Promise((r) => setTimeout(r, 300));
    expect(smtp.inbox.length).toBe(before);
  });

  it("answers service_unavailable and stores nothing when the SMTP server is down", async () => {
    const down = await startStack({ SMTP_URL: "smtp://127.0.0.1:1" });
    try {
      const k = await down.tenant("Down");
      const live = api(down.url, k.liveKey);
      const r = await live.post("/api/v1/verifications", { type: "email", channel: "email", identifier: "x@example.com" });
      expect(r.status).toBe(503);
      expect(r.body.error.code).toBe("service_unavailable");
      const list = await live.get("/api/v1/verifications");
      expect(list.body.pagination.total).toBe(0);
    } finally {
      await down.close();
    }
  }, 120_000);
});
