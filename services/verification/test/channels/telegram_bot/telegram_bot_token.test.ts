/** telegram_bot/telegram_bot_token: a bot's username, confirmed by its token (getMe once, never stored). */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "@icv/platform";
import { telegram_bot_token } from "../../../src/channels/telegram_bot/telegram_bot_token.ts";
import { bare, challenge, CTX, expectInvalid, normalize, pending, rejection, takenOptions } from "../helpers.ts";

describe("telegram_bot", () => {
  const valid: Array<[string, string, string]> = [
    ["@MyTestBot", "@MyTestBot", "@mytestbot"],
    ["MyTestBot", "@MyTestBot", "@mytestbot"],
    ["my_test_bot", "@my_test_bot", "@my_test_bot"],
    ["  @example_BOT  ", "@example_BOT", "@example_bot"],
    ["https://t.me/ExampleBot", "@ExampleBot", "@examplebot"],
    ["http://t.me/ExampleBot/", "@ExampleBot", "@examplebot"],
    ["t.me/example_bot", "@example_bot", "@example_bot"],
    ["https://T.ME/ExampleBot?start=abc", "@ExampleBot", "@examplebot"],
    ["https://telegram.me/ExampleBot", "@ExampleBot", "@examplebot"],
    ["@mybot", "@mybot", "@mybot"],
    [`${"a".repeat(29)}bot`, `@${"a".repeat(29)}bot`, `@${"a".repeat(29)}bot`],
  ];
  it.each(valid)("normalizes %j", (raw, value, canonical) => {
    expect(normalize("telegram_bot", "telegram_bot_token", raw)).toEqual({ value, canonical });
  });

  const invalid: Array<[string, string]> = [
    ["too short", "@bot"],
    ["4 characters", "@abot"],
    ["does not end in bot", "@example_user"],
    ["over 32 characters", `${"a".repeat(30)}bot`],
    ["hyphen", "@my-test-bot"],
    ["space", "@my test bot"],
    ["double @", "@@mytestbot"],
    ["other host", "https://example.com/mytestbot"],
    ["t.me without a name", "https://t.me/"],
    ["t.me with a deeper path", "https://t.me/mytestbot/123"],
    ["non-ASCII", "@mÿtestbot"],
  ];
  it.each(invalid)("rejects %s", (_name, raw) => {
    expectInvalid("telegram_bot", "telegram_bot_token", raw);
  });
});

describe("telegram_bot evidence (complete)", () => {
  const v = pending({ type: "telegram_bot", channel: "telegram_bot_token", identifier: "@Acme_bot", canonical: "@acme_bot" });

  it("a bot token is required", async () => {
    expect(await rejection(() => telegram_bot_token.complete(v, {}, CTX))).toBe("validation_error");
  });

  it("a token that is not a bot token shape is a wrong answer, without calling Telegram", async () => {
    expect(await telegram_bot_token.complete(v, { botToken: "not-a-token" }, CTX)).toEqual({
      ok: false,
      failure: ["invalid_code", "the bot token does not belong to this bot"],
    });
  });
});

describe("telegram_bot challenge, options and form", () => {
  it("an instruction and nothing to send; nothing to configure; no create option", () => {
    const c = challenge("telegram_bot", "telegram_bot_token", "@acme_bot");
    expect(c).toMatchObject({ showCode: false });
    expect(c.code).toBeUndefined();
    expect(c.deepLink).toBeUndefined();
    expect(c.instruction).toContain("@acme_bot");
    expect(telegram_bot_token.missingProvider(bare)).toEqual([]);
    expect(takenOptions("telegram_bot", "telegram_bot_token")).toEqual([]);
  });

  it("the page asks for the token", () => {
    expect(telegram_bot_token.method).toBe("bot_token");
    expect(telegram_bot_token.form).toMatchObject({ step: "bot_token", fields: [{ name: "bot_token", label: "Bot token (from @BotFather)" }] });
  });
});

describe("telegram_bot evidence against a Bot API stand-in", () => {
  const TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0";
  let server: http.Server;
  let config = CTX.config;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      res.setHeader("content-type", "application/json");
      if (req.url === `/bot${TOKEN}/getMe`) res.end(JSON.stringify({ ok: true, result: { id: 123456789, is_bot: true, username: "Acme_bot" } }));
      else {
        res.statusCode = 401;
        res.end(JSON.stringify({ ok: false, error_code: 401 }));
      }
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    config = parseConfig({ PUBLIC_BASE_URL: "https://verify.example.com", ALLOW_PRIVATE_TARGETS: "true", TELEGRAM_API_URL: api });
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("the bot's own token proves bot_token (also sent as code); a token of no bot, or of another bot, does not", async () => {
    const v = pending({ type: "telegram_bot", channel: "telegram_bot_token", identifier: "@Acme_bot", canonical: "@acme_bot" });
    expect(await telegram_bot_token.complete(v, { botToken: TOKEN }, { ...CTX, config })).toEqual({ ok: true, method: "bot_token" });
    expect(await telegram_bot_token.complete(v, { challengeCode: TOKEN }, { ...CTX, config })).toEqual({ ok: true, method: "bot_token" });
    expect((await telegram_bot_token.complete(v, { botToken: "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1" }, { ...CTX, config })).ok).toBe(false);
    const other = pending({ type: "telegram_bot", channel: "telegram_bot_token", identifier: "@Other_bot", canonical: "@other_bot" });
    expect((await telegram_bot_token.complete(other, { botToken: TOKEN }, { ...CTX, config })).ok).toBe(false);
  });
});
