// The hosted page's scripts name no channel (issue 25): what each channel asks for comes with the
// asset (its forms, from the verification service's channels), so adding a channel touches none of them.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { CHANNELS_BY_TYPE } from "@icv/platform";

const DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../src/hosted");
const SCRIPTS = ["page-client.js", "texts.js", "page-accounts.js", "domain-view.js"];
// "email" is a type as well as a channel: the page may name the type
const TYPES = new Set(Object.keys(CHANNELS_BY_TYPE));
const CHANNELS = [...new Set(Object.values(CHANNELS_BY_TYPE).flat())].filter((c) => !TYPES.has(c));

describe("the hosted page's scripts", () => {
  // (window.ethereum is the EIP-1193 browser-wallet global, a URL's http:// a scheme: neither names a channel)
  it("name no channel, as a string or a key", () => {
    const named = SCRIPTS.flatMap((file) => {
      const text = readFileSync(path.join(DIR, file), "utf8");
      return CHANNELS.filter((c) => new RegExp(`["'\`]${c}["'\`]|\\b${c}:(?!//)|(?<!window)\\.${c}\\b`).test(text)).map((c) => `${file}: ${c}`);
    });
    expect(named).toEqual([]);
  });

  it("and the channels' display names neither", () => {
    const names = ["WhatsApp", "Telegram", "SMS", "GitHub", "Kraken", "Coinbase", "Ethereum", "Solana", "Bitcoin", "DNS record", "HTTP file"];
    const named = SCRIPTS.flatMap((file) => {
      const text = readFileSync(path.join(DIR, file), "utf8");
      return names.filter((n) => text.includes(`"${n}"`) || text.includes(` ${n} `) || text.includes(`${n},`)).map((n) => `${file}: ${n}`);
    });
    expect(named).toEqual([]);
  });
});
