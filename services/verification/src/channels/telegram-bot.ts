/** Telegram bots: the bot's token, checked once with getMe and never stored. */
import { CHANNELS_BY_TYPE, AppError, type Config } from "@icv/platform";
import { MIN, invalid, type Channel } from "./channel.ts";
import { maskGeneric } from "./shared/mask.ts";

export const telegramBot: Channel = {
  type: "telegram_bot",
  channels: CHANNELS_BY_TYPE.telegram_bot,
  ttlMs: 10 * MIN,
  method: () => "bot_token",
  missingProvider: (_channel: string, _config: Config) => [],
  normalize: (_channel, input) => normalizeTelegramBot(input),
  challenge: ({ identifier, now }) => ({
    showCode: false,
    expiresAt: new Date(now.getTime() + telegramBot.ttlMs),
    instruction: `Submit the token of ${identifier} (from @BotFather). We call getMe once to confirm it belongs to that bot and never store it.`,
  }),
  async complete(v, e, ctx) {
    const botToken = e.botToken ?? e.challengeCode; // the reference SDKs send the token as code
    if (!botToken) throw new AppError("validation_error", "bot_token is required for telegram_bot verifications");
    const username = await botUsernameOf(ctx.config.TELEGRAM_API_URL, botToken);
    if (username !== undefined && username.toLowerCase() === v.identifier_canonical) return { ok: true, method: "bot_token" };
    return { ok: false, failure: ["invalid_code", "the bot token does not belong to this bot"] };
  },
  mask: maskGeneric,
};

const BOT_URL = /^(?:https?:\/\/)?(?:t|telegram)\.me\/([^/?#]*)\/?(?:[?#].*)?$/i;
const BOT_NAME = /^[A-Za-z0-9_]{5,32}$/;

function normalizeTelegramBot(input: string) {
  const url = BOT_URL.exec(input);
  const name = url ? url[1] : input.startsWith("@") ? input.slice(1) : input;
  if (!BOT_NAME.test(name)) invalid("telegram bot username must be 5-32 characters of letters, digits or '_'");
  if (!name.toLowerCase().endsWith("bot")) invalid("telegram bot username must end in 'bot'");
  return { value: `@${name}`, canonical: `@${name.toLowerCase()}` };
}

const TOKEN_RE = /^\d{5,16}:[A-Za-z0-9_-]{30,64}$/;

/**
 * Asks the Telegram Bot API whose token this is (`getMe`) and answers the bot's `@username`, or
 * undefined when Telegram refuses the token. The token is used for this one call and never
 * stored or logged. Telegram unreachable → service_unavailable (the user's attempt is not spent).
 */
export async function botUsernameOf(apiBase: string, token: string, timeoutMs = 5_000): Promise<string | undefined> {
  if (!TOKEN_RE.test(token)) return undefined;
  let res: Response;
  try {
    res = await fetch(`${apiBase.replace(/\/+$/, "")}/bot${token}/getMe`, { signal: AbortSignal.timeout(timeoutMs), redirect: "error" });
  } catch {
    throw new AppError("service_unavailable", "Telegram could not be reached to check the bot token; try again");
  }
  if (res.status === 401 || res.status === 404) return undefined;
  if (!res.ok) throw new AppError("service_unavailable", `Telegram answered ${res.status} while checking the bot token; try again`);
  const body = (await res.json().catch(() => undefined)) as { ok?: boolean; result?: { is_bot?: boolean; username?: string } } | undefined;
  if (!body?.ok || !body.result?.is_bot || typeof body.result.username !== "string") return undefined;
  return `@${body.result.username}`;
}
