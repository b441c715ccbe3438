// The telegram provider file as the table uses it: configuration (the webhook secret only in
// webhook mode), address and deep link, the secret-token hook, and updates read into common
// messages (only people in their private chat; a contact is the sender's own or not).
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config.ts";
import { telegram } from "../../src/messaging/telegram.ts";

const TOKEN = "7000000001:AAHk3xQ9vZ_secretpartofthetoken-0123";
const update = (message: object) => Buffer.from(JSON.stringify({ update_id: 7, message: { message_id: 1, date: 1, ...message } }));

describe("telegram provider", () => {
  it("needs the username and token, and the webhook secret in webhook mode", () => {
    expect(telegram.missing(parseConfig({}))).toEqual(["TELEGRAM_BOT_USERNAME", "TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET"]);
    expect(telegram.missing(parseConfig({ TELEGRAM_MODE: "polling" }))).toEqual(["TELEGRAM_BOT_USERNAME", "TELEGRAM_BOT_TOKEN"]);
    expect(telegram.address(parseConfig({ TELEGRAM_BOT_USERNAME: "acme_bot" }))).toBe("@acme_bot");
    expect(telegram.address(parseConfig({}))).toBe("@icv_test_bot");
    expect(telegram.deepLink("@acme_bot", "AB12CD", "x")).toBe("https://t.me/acme_bot?start=AB12CD");
    expect(telegram.expectedMessage("AB12CD", "x")).toBe("/start AB12CD");
  });

  it("its hook is the secret token, only in webhook mode", () => {
    const hook = telegram.hook(parseConfig({ TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_WEBHOOK_SECRET: "hook-secret-0123456789" }))!;
    expect(hook.verify({ body: Buffer.alloc(0), header: () => "hook-secret-0123456789", url: "" })).toBe(true);
    expect(hook.verify({ body: Buffer.alloc(0), header: () => "hook-secret-0123456780", url: "" })).toBe(false);
    expect(
      telegram.hook(parseConfig({ TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_WEBHOOK_SECRET: "hook-secret-0123456789", TELEGRAM_MODE: "polling" })),
    ).toBeUndefined();
  });

  it("reads private messages and contacts; bots, groups and other updates are ignored", () => {
    const from = { id: 501, is_bot: false };
    expect(telegram.parse(update({ from, chat: { id: 501, type: "private" }, text: "/start AB12CD" }))).toEqual([
      { id: "7", replyTo: "501", sender: { user: "501" }, text: "/start AB12CD", contact: undefined },
    ]);
    expect(telegram.parse(update({ from, chat: { id: 501, type: "private" }, contact: { phone_number: "+1555", user_id: 999 } }))![0].contact).toEqual({
      phone: "+1555",
      own: false,
    });
    expect(telegram.parse(update({ from, chat: { id: -5, type: "group" }, text: "x" }))![0].ignored).toBe(true);
    expect(telegram.parse(update({ from: { id: 9, is_bot: true }, chat: { id: 9, type: "private" }, text: "x" }))![0].ignored).toBe(true);
    expect(telegram.parse(Buffer.from('{"update_id":8}'))![0].ignored).toBe(true);
    expect(telegram.parse(Buffer.from("nope"))).toBeUndefined();
  });
});
