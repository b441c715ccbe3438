import { createHash, createHmac, timingSafeEqual } from "node:crypto";

/**
 * Checks that an inbound provider webhook really comes from the provider: WhatsApp's
 * X-Hub-Signature-256, Twilio's X-Twilio-Signature and Telegram's secret token. Pure functions;
 * every comparison is constant-time and a missing, empty or garbled header is simply invalid.
 */

/** Compares two strings in time independent of where they differ (both are hashed to equal length first). */
function sameString(a: string, b: string): boolean {
  const ha = createHash("sha256").update(a, "utf8").digest();
  const hb = createHash("sha256").update(b, "utf8").digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}

/** The X-Hub-Signature-256 value Meta sends with a webhook body: "sha256=" + hex HMAC-SHA256(appSecret, body). */
export function whatsappSignature(appSecret: string, rawBody: Uint8Array | string): string {
  return `sha256=${createHmac("sha256", appSecret).update(rawBody).digest("hex")}`;
}

/** True when `header` is the X-Hub-Signature-256 of exactly these body bytes under the app secret. */
export function whatsappSignatureValid(appSecret: string, rawBody: Buffer, header: string | undefined): boolean {
  if (!appSecret || typeof header !== "string") return false;
  const m = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim());
  if (!m) return false;
  const expected = createHmac("sha256", appSecret).update(rawBody).digest();
  return timingSafeEqual(expected, Buffer.from(m[1], "hex"));
}

/**
 * Twilio's X-Twilio-Signature for a request: base64 HMAC-SHA1, keyed with the auth token, of the
 * full URL Twilio requested (with its query string) followed by every POST parameter's name and
 * value, in parameter-name order (case-sensitive code-unit order), with no separators.
 */
export function twilioSignature(authToken: string, url: string, params: Record<string, string>): string {
  const names = Object.keys(params).sort();
  let data = url;
  for (const name of names) data += name + params[name];
  return createHmac("sha1", authToken).update(data, "utf8").digest("base64");
}

/** The URL with its default port written out and left out (Twilio may sign either form); only the URL itself otherwise. */
function urlForms(url: string): string[] {
  const m = /^(https?):\/\/([^/?#@]*@)?(\[[^\]]*\]|[^/?#:]*)(?::(\d*))?(.*)$/is.exec(url);
  if (!m) return [url];
  const [, scheme, userinfo = "", host, port, rest] = m;
  const defaultPort = scheme.toLowerCase() === "https" ? "443" : "80";
  if (port !== undefined && port !== defaultPort) return [url];
  const head = `${scheme}://${userinfo}${host}`;
  return [url, port === undefined ? `${head}:${defaultPort}${rest}` : `${head}${rest}`];
}

/**
 * True when `header` is Twilio's signature of this request: `url` is the full public URL Twilio
 * was configured with (including any query string), `params` the form fields it posted. Like
 * Twilio's own helpers, a URL on the default port is accepted signed with or without the port.
 */
export function twilioSignatureValid(authToken: string, url: string, params: Record<string, string>, header: string | undefined): boolean {
  if (!authToken || typeof header !== "string" || header === "") return false;
  let valid = false;
  for (const form of urlForms(url)) valid = sameString(twilioSignature(authToken, form, params), header) || valid;
  return valid;
}

/** True when Telegram's X-Telegram-Bot-Api-Secret-Token header equals the secret we gave setWebhook. */
export function secretTokenValid(expected: string, got: string | undefined): boolean {
  if (!expected || typeof got !== "string") return false;
  return sameString(expected, got);
}
