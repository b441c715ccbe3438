/**
 * Phone by Viber: the deep link opens our Viber bot with the code as its context, the bot asks
 * for the number (a share-phone button), and the shared contact's number must be the
 * verification's own. Viber cannot message a number first.
 */
import { messagingDeepLink } from "@icv/platform";
import { phoneChannel } from "./reverse-otp.ts";

export const viber = phoneChannel({
  channel: "viber",
  name: "Viber",
  invite: (to, code) => ({
    instruction: `Open the link to chat with ${to} in Viber and share your phone number with the button the bot shows.`,
    deepLink: messagingDeepLink("viber", to, code),
  }),
  // the deep link's context carries the code
  testBody: (code) => code,
  sessionInstruction: "Confirmed by this number's contact, shared with our Viber bot.",
});
