/** A Telegram bot, confirmed by its token: checked once with getMe and never stored. */
import type { Config } from "@icv/platform";
import { checkRaw, invalid, MIN, type Channel, type NormalizedIdentifier } from "../channel.ts";
import { botTokenEvidence } from "../shared/evidence.ts";
import { maskGeneric } from "../shared/mask.ts";
import { takes } from "../shared/options.ts";
import { parseWith } from "../shared/parse.ts";
import { botUsernameOf } from "./get-me.ts";

const TTL_MS = 10 * MIN;
const BOT_URL = /^(?:https?:\/\/)?(?:t|telegram)\.me\/([^/?#]*)\/?(?:[?#].*)?$/i;
const BOT_NAME = /^[A-Za-z0-9_]{5,32}$/;

function normalizeTelegramBot(raw: string): NormalizedIdentifier {
  const input = checkRaw(raw);
  const url = BOT_URL.exec(input);
  const name = url ? url[1] : input.startsWith("@") ? input.slice(1) : input;
  if (!BOT_NAME.test(name)) invalid("telegram bot username must be 5-32 characters of letters, digits or '_'");
  if (!name.toLowerCase().endsWith("bot")) invalid("telegram bot username must end in 'bot'");
  return { value: `@${name}`, canonical: `@${name.toLowerCase()}` };
}

export const telegram_bot_token: Channel = {
  type: "telegram_bot",
  channel: "telegram_bot_token",
  method: "bot_token",
  ttlMs: TTL_MS,
  options: takes(),
  evidence: botTokenEvidence,
  form: { name: "Bot token", deliveries: [], step: "bot_token", fields: [{ name: "bot_token", label: "Bot token (from @BotFather)", input: "text" }] },
  // the bot's own token is the only credential
  missingProvider: (_config: Config) => [],
  normalize: normalizeTelegramBot,
  challenge: ({ identifier, now }) => ({
    showCode: false,
    expiresAt: new Date(now.getTime() + TTL_MS),
    instruction: `Submit the token of ${identifier} (from @BotFather). We call getMe once to confirm it belongs to that bot and never store it.`,
  }),
  async complete(v, body, ctx) {
    const { token } = parseWith(botTokenEvidence, body);
    const username = await botUsernameOf(ctx.config.TELEGRAM_API_URL, token);
    if (username !== undefined && username.toLowerCase() === v.identifier_canonical) return { ok: true, method: "bot_token" };
    return { ok: false, failure: ["invalid_code", "the bot token does not belong to this bot"] };
  },
  mask: maskGeneric,
};
