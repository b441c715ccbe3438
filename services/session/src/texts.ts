// Every text the bots send or a session shows, in one place so they can be translated.

export const AUTH_PURPOSE: Record<string, string> = { "2fa": "sign-in", login: "login", recovery: "account recovery" };

/** The text a WhatsApp or SMS deep link pre-fills (the session token is what we look for in it). */
export const sessionPrefill = (kind: "phone" | "auth", authType: string | null, token: string) =>
  kind === "phone" ? `Verify my phone number: ${token}` : `Confirm ${AUTH_PURPOSE[authType ?? "2fa"]}: ${token}`;

/** How to answer a session on a provider (its display name, and whether it is a bot chat or a message from the number). */
export function sessionInstructions(kind: "phone" | "auth", label: string, flow: "number" | "chat", authType: string | null, target: string): string {
  const what = kind === "phone" ? "to confirm your phone number" : `to confirm this ${AUTH_PURPOSE[authType ?? "2fa"]}`;
  if (flow === "chat")
    return `Open the link (or scan the QR code) ${what}: it opens ${target} in ${label}. Press Start if asked, then share your phone number with the button the bot shows.`;
  // sms: the RFC 5724 URI opens the phone's messages app with the text filled in
  const app = label === "SMS" ? "your messages app with a text" : `${label} with a message`;
  return `Open the link (or scan the QR code) ${what}: it opens ${app} to ${target}. Send it without changing it.`;
}

/** A built-in reply with the project's business name in front (the branding of a text without a template). */
export const branded = (businessName: string | undefined, text: string) => (businessName ? `${businessName}: ${text}` : text);

export const REPLY = {
  askContact: "To confirm, tap the button below to share your phone number with us.",
  shareButton: "Share my phone number",
  foreignContact: "Please share your own phone number with the button below, not someone else's contact.",
  noConversation: "Open the link from the app or website you are verifying with first, then share your number.",
  help: "Hi! To verify your number, send the 6-character code shown in the app or website, or open the link it gave you.",
  verified: "Thank you, your phone number is verified. You can go back to the app now.",
  alreadyVerified: "This number is already verified. You can go back to the app now.",
  sessionVerified: "Thank you, confirmed. You can go back to the app now.",
  authFailed: "This request was meant for a different phone number, so it was not confirmed.",
  wrongSender: (left: number) =>
    `This code was issued for a different phone number. Send it from the number you are verifying (${left} ${left === 1 ? "try" : "tries"} left).`,
  failed: "This code was sent from the wrong number too many times; the verification has failed. Start a new one in the app.",
  expired: "This code or link has expired. Start again in the app to get a new one.",
  notPending: "This code or link can no longer be used. Start again in the app if you still need to verify.",
  unknown: "We don't recognise this code or link. Check it, or start again in the app.",
  throttled: "Too many wrong or unknown codes came from you. We will ignore your messages for up to an hour; then start again in the app.",
} as const;
