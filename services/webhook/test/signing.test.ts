import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { newWebhookSecret, serviceSignature, signatureHeaders, standardKey, standardSignature } from "../src/signing.ts";

const body = JSON.stringify({ id: "evt_01J0000000000000000000000", event: "verification.completed", test: true, note: "ünïcode ✓" });
const now = () => Math.floor(Date.now() / 1000);

describe("webhook secrets", () => {
  it("are whsec_ + standard base64 of 32 random bytes", () => {
    const s = newWebhookSecret();
    expect(s).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(standardKey(s)).toHaveLength(32);
    expect(newWebhookSecret()).not.toBe(s);
  });

  it("decodes the older base64url secrets to the same 32 bytes", () => {
    const raw = randomBytes(32);
    expect(standardKey(`whsec_${raw.toString("base64url")}`).equals(raw)).toBe(true);
    expect(standardKey(`whsec_${raw.toString("base64")}`).equals(raw)).toBe(true);
  });
});

describe("X-Service-Signature", () => {
  it("is the lower-case hex HMAC-SHA256 of the raw body keyed by the whole secret string", () => {
    const secret = newWebhookSecret();
    const sig = serviceSignature(body, secret);
    expect(sig).toMatch(/^[0-9a-f]{64}$/);
    // what a receiver does, in constant time
    const mine = createHmac("sha256", secret).update(body, "utf8").digest("hex");
    expect(timingSafeEqual(Buffer.from(sig), Buffer.from(mine))).toBe(true);
    expect(serviceSignature(`${body} `, secret)).not.toBe(sig);
    expect(serviceSignature(body, newWebhookSecret())).not.toBe(sig);
  });
});

describe("Standard Webhooks headers", () => {
  it("verify with the standardwebhooks library", () => {
    const secret = newWebhookSecret();
    const headers = signatureHeaders("whd_01J0000000000000000000001", now(), body, { current: secret });
    expect(headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it("fail verification when the body, id or timestamp was changed", () => {
    const secret = newWebhookSecret();
    const ts = now();
    const headers = signatureHeaders("whd_A", ts, body, { current: secret });
    const wh = new Webhook(secret);
    expect(() => wh.verify(body.replace("true", "false"), headers)).toThrow(/No matching signature/);
    expect(() => wh.verify(body, { ...headers, "webhook-id": "whd_B" })).toThrow(/No matching signature/);
    expect(() => wh.verify(body, { ...headers, "webhook-timestamp": String(ts - 1) })).toThrow(/No matching signature/);
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow(/No matching signature/);
  });

  it("carry X-Proof-Signature, the reference SDKs' name for X-Service-Signature (the current secret's, also in a rotation)", () => {
    const current = newWebhookSecret();
    const previous = newWebhookSecret();
    const headers = signatureHeaders("whd_A", now(), body, { current, previous });
    expect(headers["x-proof-signature"]).toBe(serviceSignature(body, current));
    expect(headers["x-proof-signature"]).toBe(headers["x-service-signature"]);
    expect(headers["x-proof-signature"]).not.toBe(serviceSignature(body, previous));
  });

  it("sign with both secrets during a rotation's overlap, so either verifies", () => {
    const current = newWebhookSecret();
    const previous = newWebhookSecret();
    const headers = signatureHeaders("whd_A", now(), body, { current, previous });
    const parts = headers["webhook-signature"].split(" ");
    expect(parts).toHaveLength(2);
    expect(parts[0]).toBe(standardSignature("whd_A", Number(headers["webhook-timestamp"]), body, current));
    expect(new Webhook(current).verify(body, headers)).toBeTruthy();
    expect(new Webhook(previous).verify(body, headers)).toBeTruthy();
    expect(headers["x-service-signature"]).toBe(serviceSignature(body, current));
    expect(headers["x-service-signature-previous"]).toBe(serviceSignature(body, previous));
  });

  it("carry no previous signature outside an overlap", () => {
    const headers = signatureHeaders("whd_A", now(), body, { current: newWebhookSecret() });
    expect(headers["webhook-signature"].split(" ")).toHaveLength(1);
    expect(headers).not.toHaveProperty("x-service-signature-previous");
  });

  it("sign with the bytes of a base64url (older) secret as the key", () => {
    const raw = randomBytes(32);
    const legacy = `whsec_${raw.toString("base64url")}`;
    const headers = signatureHeaders("whd_A", now(), body, { current: legacy });
    // the library decodes standard base64 only: hand it the same key in that form
    expect(new Webhook(`whsec_${raw.toString("base64")}`).verify(body, headers)).toBeTruthy();
  });
});
