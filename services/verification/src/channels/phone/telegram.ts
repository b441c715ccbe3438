/** Phone by Telegram: the user opens our bot and shares the number (or sends the code). Telegram cannot message a number first. */
import { phoneChannel } from "./reverse-otp.ts";

export const telegram = phoneChannel({
  channel: "telegram",
  name: "Telegram",
  invite: (to, code) => ({
    instruction: `Open ${to} in Telegram, press Start and share your phone number (or send the code ${code}).`,
    deepLink: `https://t.me/${to.slice(1)}?start=${code}`,
  }),
  // the t.me/<bot>?start=<code> link makes the app send "/start <code>"
  testBody: (code) => `/start ${code}`,
  sessionInstruction: "Confirmed by a message from this number to our Telegram bot.",
});
