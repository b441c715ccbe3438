import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { botUsernameOf } from "../../../src/channels/telegram_bot/get-me.ts";

// A local server speaking the Bot API's getMe: one known token, everything else 401 as Telegram answers.
const TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0";
let server: http.Server;
let base: string;
const seen: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push(req.url ?? "");
    res.setHeader("content-type", "application/json");
    if (req.url === `/bot${TOKEN}/getMe`) {
      res.end(JSON.stringify({ ok: true, result: { id: 123456789, is_bot: true, first_name: "Shop", username: "MyShopBot" } }));
    } else if (req.url?.startsWith("/bot999999")) {
      res.statusCode = 502;
      res.end("{}");
    } else {
      res.statusCode = 401;
      res.end(JSON.stringify({ ok: false, error_code: 401, description: "Unauthorized" }));
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe("telegram bot token check (getMe)", () => {
  it("answers the bot's @username for a token Telegram accepts", async () => {
    expect(await botUsernameOf(base, TOKEN)).toBe("@MyShopBot");
    expect(seen).toContain(`/bot${TOKEN}/getMe`);
  });

  it("answers undefined for a token Telegram refuses, and never calls out for a malformed one", async () => {
    expect(await botUsernameOf(base, "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1")).toBeUndefined();
    const before = seen.length;
    expect(await botUsernameOf(base, "not-a-token")).toBeUndefined();
    expect(seen.length).toBe(before);
  });

  it("reports Telegram outages as service_unavailable instead of a wrong token", async () => {
    await expect(botUsernameOf(base, "9999999:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0")).rejects.toMatchObject({ code: "service_unavailable" });
    await expect(botUsernameOf("http://127.0.0.1:1", TOKEN, 500)).rejects.toMatchObject({ code: "service_unavailable" });
  });
});
