// verifyWebhook played by an attacker: messages signed by an independent signer (the
// `standardwebhooks` library, and node:crypto for the hex scheme, as docs/events-and-webhooks.md
// describes them), then forged, tampered with, replayed late, or stripped to the weaker scheme.
// A real delivered webhook is checked in stack.test.ts.
import { createHmac, randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { verifyWebhook, WebhookVerificationError } from "../src/index.ts";

const secret = `whsec_${randomBytes(32).toString("base64")}`;
const oldSecret = `whsec_${randomBytes(32).toString("base64")}`;
const body = JSON.stringify({ id: "evt_01", type: "verification.completed", verification_id: "ver_01", status: "verified", test: true });

/** The headers the service sends for `raw` signed with each secret (the first is the current one). */
function signed(raw: string, secrets: string[], at = new Date()) {
  const id = "whd_01KAB";
  const sigs = secrets.map((s) => new Webhook(s).sign(id, at, raw));
  const hex = createHmac("sha256", secrets[0]).update(raw).digest("hex");
  return {
    "content-type": "application/json",
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": sigs.join(" "),
    "x-service-signature": hex,
    "x-proof-signature": hex,
    ...(secrets[1] ? { "x-service-signature-previous": createHmac("sha256", secrets[1]).update(raw).digest("hex") } : {}),
  } as Record<string, string>;
}

const refused = (f: () => unknown, why: RegExp) => {
  expect(f).toThrow(WebhookVerificationError);
  expect(f).toThrow(why);
};

describe("verifyWebhook", () => {
  it("answers the parsed body of a genuine message, from a plain header object, a Headers, or bytes", () => {
    const h = signed(body, [secret]);
    expect(verifyWebhook(body, h, { secret })).toEqual(JSON.parse(body));
    expect(verifyWebhook(Buffer.from(body), new Headers(h), { secret })).toMatchObject({ verification_id: "ver_01" });
    const upper = Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toUpperCase(), v]));
    expect(verifyWebhook(body, upper, { secret })).toMatchObject({ type: "verification.completed" });
  });

  it("refuses another secret's signature, a changed body, and a re-serialized body", () => {
    const h = signed(body, [secret]);
    refused(() => verifyWebhook(body, h, { secret: oldSecret }), /no valid signature/);
    refused(() => verifyWebhook(body.replace("verified", "revoked"), h, { secret }), /no valid signature/);
    refused(() => verifyWebhook(JSON.stringify(JSON.parse(body), null, 1), h, { secret }), /no valid signature/);
    refused(() => verifyWebhook(body, { ...h, "webhook-id": "whd_other" }, { secret }), /no valid signature/);
  });

  it("refuses a message replayed outside the tolerance window, even with its genuine signature", () => {
    const tenMinutesAgo = new Date(Date.now() - 600_000);
    const h = signed(body, [secret], tenMinutesAgo);
    refused(() => verifyWebhook(body, h, { secret }), /tolerance window/);
    // a stripped or wrong timestamp does not help: it is signed
    refused(() => verifyWebhook(body, { ...h, "webhook-timestamp": String(Math.floor(Date.now() / 1000)) }, { secret }), /no valid signature/);
    refused(() => verifyWebhook(body, { ...h, "webhook-timestamp": "soon" }, { secret }), /unix seconds/);
    // within a wider window it passes; from the future beyond it, it does not
    expect(verifyWebhook(body, h, { secret, toleranceSeconds: 900 })).toMatchObject({ id: "evt_01" });
    refused(() => verifyWebhook(body, signed(body, [secret], new Date(Date.now() + 600_000)), { secret }), /tolerance window/);
  });

  it("by default wants the Standard Webhooks signature: the hex header alone (which signs no time) is refused", () => {
    const { "webhook-signature": _s, "webhook-id": _i, "webhook-timestamp": _t, ...hexOnly } = signed(body, [secret]);
    refused(() => verifyWebhook(body, hexOnly, { secret }), /no valid signature \(standard-webhooks\)/);
    expect(verifyWebhook(body, hexOnly, { secret, schemes: ["hmac-hex"] })).toMatchObject({ id: "evt_01" });
    // X-Proof-Signature (the reference SDKs' header) alone is enough for the hex scheme
    expect(verifyWebhook(body, { "x-proof-signature": hexOnly["x-proof-signature"] }, { secret, schemes: ["hmac-hex"] })).toMatchObject({ id: "evt_01" });
    refused(() => verifyWebhook(body, { "x-service-signature": "00".repeat(32) }, { secret, schemes: ["hmac-hex"] }), /no valid signature/);
    // with both schemes a stale signed timestamp still refuses: the weaker header cannot launder a replay
    const stale = signed(body, [secret], new Date(Date.now() - 600_000));
    refused(() => verifyWebhook(body, stale, { secret, schemes: ["standard-webhooks", "hmac-hex"] }), /tolerance window/);
  });

  it("passes during a rotation with either secret (both signatures are sent), and takes several secrets", () => {
    const h = signed(body, [secret, oldSecret]);
    expect(h["webhook-signature"].split(" ")).toHaveLength(2);
    expect(verifyWebhook(body, h, { secret: oldSecret })).toMatchObject({ id: "evt_01" });
    expect(verifyWebhook(body, signed(body, [secret]), { secret: [oldSecret, secret] })).toMatchObject({ id: "evt_01" });
    const { "webhook-signature": _s, ...hex } = h;
    expect(verifyWebhook(body, hex, { secret: oldSecret, schemes: ["hmac-hex"] })).toMatchObject({ id: "evt_01" });
  });

  it("decodes the first tenants' base64url secrets too", () => {
    const raw = randomBytes(32);
    const urlSafe = `whsec_${raw.toString("base64url")}`;
    const h = signed(body, [`whsec_${raw.toString("base64")}`]);
    expect(verifyWebhook(body, h, { secret: urlSafe })).toMatchObject({ id: "evt_01" });
  });

  it("refuses without a secret, an oversized body, and a signed body that is not JSON", () => {
    refused(() => verifyWebhook(body, signed(body, [secret]), { secret: "" }), /no webhook secret/);
    refused(() => verifyWebhook(body, signed(body, [secret]), { secret: [] }), /no webhook secret/);
    const big = "x".repeat(1_048_577);
    refused(() => verifyWebhook(big, signed(big, [secret]), { secret }), /over 1 MB/);
    refused(() => verifyWebhook("not json", signed("not json", [secret]), { secret }), /not JSON/);
  });
});
