/** phone/viber: the viber:// link that opens our bot with the code as its context; Viber cannot message a number first. */
import { describe, expect, it } from "vitest";
import { parseConfig } from "@icv/platform";
import { viber } from "../../../src/channels/phone/viber.ts";
import { challenge, options } from "../helpers.ts";
import { reverseOtpCases } from "./phone-cases.ts";

const withBot = parseConfig({
  PUBLIC_BASE_URL: "https://verify.example.com",
  VIBER_BOT_URI: "acme-verify",
  VIBER_AUTH_TOKEN: "4453b6ac12345678-e02c5f12174805f9",
});

describe("phone/viber", () => {
  it("viber://pa?chatURI=<bot>&context=CODE; a live key needs the bot's URI and token", () => {
    const c = challenge("phone", "viber", "+37069199199", { env: "live", config: withBot });
    expect(c.deepLink).toBe(`viber://pa?chatURI=acme-verify&context=${c.code}`);
    expect(c.showCode).toBe(true);
    expect(c.instruction).toContain("acme-verify");
    expect(viber.missingProvider?.(withBot)).toEqual([]);
    expect(viber.missingProvider?.(parseConfig({}))).toEqual(["VIBER_BOT_URI", "VIBER_AUTH_TOKEN"]);
  });

  it("test keys without providers get the documented placeholder bot", () => {
    const c = challenge("phone", "viber", "+37069199199");
    expect(c.deepLink).toBe(`viber://pa?chatURI=icv-test-bot&context=${c.code}`);
  });

  it("cannot send a code to a number: delivery outbound is refused, the page offers inbound only, nothing is sent", () => {
    expect(options("phone", "viber", { delivery: "outbound" })).toMatchObject({ refused: "validation_error" });
    expect(viber.form.deliveries).toEqual([{ way: "inbound", label: "Send a code from my phone" }]);
    expect(viber.sends).toBeUndefined();
  });

  reverseOtpCases(viber, (code) => code, "Confirmed by this number's contact, shared with our Viber bot.");
});
