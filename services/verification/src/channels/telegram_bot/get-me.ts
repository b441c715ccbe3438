/** The Telegram Bot API's getMe: whose token this is, asked once, the token never stored or logged. */
import { AppError } from "@icv/platform";

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
