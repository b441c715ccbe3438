// The closed vocabularies come from vocabulary.proto's enums: the spec's type/channel table is the
// asset_types option on the Channel values, and every list keeps the wire's strings and order.
import { describe, expect, it } from "vitest";
import { ChannelSchema } from "@icv/contracts/gen/icv/vocabulary/v1/vocabulary_pb.ts";
import { ASSET_CHANNELS, ASSET_TYPES, CHALLENGE_METHODS, CHANNELS_BY_TYPE, PHONE_DELIVERIES, VERIFICATION_STATUSES } from "../src/index.ts";

describe("vocabulary.ts, read from vocabulary.proto", () => {
  it("is the spec's type/channel table, in its order", () => {
    expect(CHANNELS_BY_TYPE).toEqual({
      phone: ["whatsapp", "telegram", "sms", "viber"],
      email: ["email"],
      domain: ["dns", "http", "email", "auto"],
      social: ["github", "google", "facebook", "x", "linkedin", "instagram", "youtube", "tiktok"],
      wallet: ["ethereum", "solana", "bitcoin"],
      account: ["coinbase", "kraken"],
      telegram_bot: ["telegram_bot_token"],
    });
    expect(ASSET_TYPES).toEqual(Object.keys(CHANNELS_BY_TYPE));
    expect(ASSET_CHANNELS).toEqual([...new Set(Object.values(CHANNELS_BY_TYPE).flat())]);
  });

  it("gives every channel of the Channel enum at least one asset type (a value without one would be in no table row)", () => {
    const named = new Set(ASSET_CHANNELS as string[]);
    const values = ChannelSchema.values.filter((v) => v.number !== 0).map((v) => v.localName.toLowerCase());
    expect(values.filter((v) => !named.has(v))).toEqual([]);
  });

  it("keeps the wire's strings of statuses, methods and deliveries", () => {
    expect(VERIFICATION_STATUSES).toEqual(["pending", "verified", "suspended", "failed", "expired", "revoked"]);
    expect(CHALLENGE_METHODS).toEqual(["code", "signature", "bot_token", "domain_check", "oauth", "api_key"]);
    expect(PHONE_DELIVERIES).toEqual(["inbound", "outbound"]);
  });
});
