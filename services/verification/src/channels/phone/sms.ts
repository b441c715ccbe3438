/** Phone by SMS: the user texts the shown code to our number, or we send a code by SMS (Twilio). */
import { phoneChannel } from "./reverse-otp.ts";

export const sms = phoneChannel({
  channel: "sms",
  name: "SMS",
  invite: (to, code) => ({ instruction: `Text the code ${code} to ${to} from this phone.`, deepLink: `sms:${to}?body=${code}` }),
  // sms: links pre-fill the code
  testBody: (code) => code,
  sessionInstruction: "Confirmed by a text message from this number to our SMS number.",
  outbound: { by: "SMS", what: "SMS" },
});
