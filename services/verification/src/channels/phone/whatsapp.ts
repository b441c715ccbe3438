/** Phone by WhatsApp: the user sends the shown code to our WhatsApp number, or we send a code by a WhatsApp template. */
import { phoneChannel } from "./reverse-otp.ts";

export const whatsapp = phoneChannel({
  channel: "whatsapp",
  name: "WhatsApp",
  invite: (to, code) => ({
    instruction: `Send the code ${code} from your WhatsApp account to ${to}.`,
    deepLink: `https://wa.me/${to.slice(1)}?text=${encodeURIComponent(code)}`,
  }),
  // wa.me links pre-fill the code
  testBody: (code) => code,
  sessionInstruction: "Confirmed by a message from this number to our WhatsApp number.",
  outbound: { by: "WhatsApp", what: "WhatsApp message" },
});
