/**
 * The channel registry: the table type → channel → Channel, the only place that picks a channel.
 * Adding a channel is one file in its type's folder and one line here (the spec's table,
 * @icv/platform's CHANNELS_BY_TYPE, read from vocabulary.proto, names it first;
 * test/channels/registry.test.ts holds the two together).
 */
import { AppError, type AssetChannel, type AssetType } from "@icv/platform";
import type { Channel } from "./channel.ts";
import { coinbase } from "./account/coinbase.ts";
import { kraken } from "./account/kraken.ts";
import { auto } from "./domain/auto.ts";
import { dns } from "./domain/dns.ts";
import { email as domainEmail } from "./domain/email.ts";
import { http } from "./domain/http.ts";
import { email } from "./email/email.ts";
import { sms } from "./phone/sms.ts";
import { telegram } from "./phone/telegram.ts";
import { viber } from "./phone/viber.ts";
import { whatsapp } from "./phone/whatsapp.ts";
import { facebook } from "./social/facebook.ts";
import { github } from "./social/github.ts";
import { google } from "./social/google.ts";
import { instagram } from "./social/instagram.ts";
import { linkedin } from "./social/linkedin.ts";
import { tiktok } from "./social/tiktok.ts";
import { x } from "./social/x.ts";
import { youtube } from "./social/youtube.ts";
import { telegram_bot_token } from "./telegram_bot/telegram_bot_token.ts";
import { bitcoin } from "./wallet/bitcoin.ts";
import { ethereum } from "./wallet/ethereum.ts";
import { solana } from "./wallet/solana.ts";

type Table = Record<AssetType, Partial<Record<AssetChannel, Channel>>>;

export const CHANNELS: Table = {
  phone: { whatsapp, telegram, sms, viber },
  email: { email },
  domain: { dns, http, email: domainEmail, auto },
  social: { github, google, facebook, x, linkedin, instagram, youtube, tiktok },
  wallet: { ethereum, solana, bitcoin },
  account: { coinbase, kraken },
  telegram_bot: { telegram_bot_token },
};

/** The channel of a type/channel pair; validation_error when the table has no such pair. */
export function channelFor(type: string, channel: string): Channel {
  const row: Record<string, Channel | undefined> | undefined = Object.hasOwn(CHANNELS, type) ? CHANNELS[type as AssetType] : undefined;
  const found = row && Object.hasOwn(row, channel) ? row[channel] : undefined;
  if (!found)
    throw new AppError("validation_error", `channel ${channel || "(empty)"} is not a channel of type ${type || "(empty)"}`, {
      details: [{ field: "channel", message: "not a channel of this type", code: "invalid" }],
    });
  return found;
}
