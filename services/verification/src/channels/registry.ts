/**
 * The channel registry: the only place that picks a channel. Its table (table.gen.ts, type →
 * channel → Channel) is generated from vocabulary.proto's Channel enum (npm run generate): adding
 * a channel is its proto line and its file <type>/<channel>.ts, nothing here.
 */
import { AppError, type AssetType, type ConfigShape } from "@icv/platform";
import type { Channel } from "./channel.ts";
import { CHANNELS } from "./table.gen.ts";

export { CHANNELS };

/**
 * The configuration keys every channel declares (SMTP, the OAuth apps, Kraken's API), with their
 * validation: the section the processes that run the verification service give parseConfig
 * (main.ts, scripts/start-all.ts). A key two channels share (SMTP_URL) is one schema.
 */
export const CHANNEL_CONFIG: ConfigShape = Object.assign({}, ...Object.values(CHANNELS).flatMap((row) => Object.values(row).map((c) => c.config ?? {})));

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
