// What the hosted page is told, as plain functions: where it sends the user back, the phone code
// it shows, and which channels are available.
import { describe, expect, it } from "vitest";
import { parseConfig } from "@icv/platform";
import { hostedAssets, phoneCodeOf, redirectTarget } from "../src/requests/hosted.ts";
import type { RequestAssetView, RequestView, VerificationRow } from "../src/store/rows.ts";

const at = new Date("2026-01-01T00:00:00.000Z");
const asset = (a: Partial<RequestAssetView>): RequestAssetView => ({
  request_id: "vreq_1",
  idx: 0,
  type: "email",
  identifier: null,
  channel: null,
  allowed_channels: null,
  required: true,
  status: "pending",
  verification_id: null,
  v_status: null,
  v_verified_at: null,
  proof_identifier_salt: null,
  proof_sd_jwt_vc: null,
  proof_token: null,
  proof_expires_at: null,
  starts: 0,
  ...a,
});
const request = (r: Partial<RequestView>): RequestView =>
  ({
    id: "vreq_1",
    tenant_id: "ten_1",
    environment: "test",
    status: "pending",
    reference_id: null,
    action_type: "verification",
    action_title: null,
    action_description: null,
    redirect_url: null,
    callback_url: null,
    partial_ok: false,
    external_user_id: null,
    client_metadata: null,
    created_at: at,
    updated_at: at,
    expires_at: at,
    completed_at: null,
    cancelled_at: null,
    assets: [asset({})],
    ...r,
  }) as RequestView;

describe("redirectTarget", () => {
  it("appends request_id and status once the request is final, keeping the tenant's own query", () => {
    const r = request({ redirect_url: "https://shop.example/back?order=42", status: "completed" });
    expect(redirectTarget(r)).toBe("https://shop.example/back?order=42&request_id=vreq_1&status=completed");
    expect(redirectTarget({ ...r, status: "expired" })).toBe("https://shop.example/back?order=42&request_id=vreq_1&status=expired");
    expect(redirectTarget({ ...r, status: "cancelled" })).toContain("status=cancelled");
  });

  it("says nothing while the request is open, or partial without partial_ok, or without redirect_url", () => {
    const r = request({ redirect_url: "https://shop.example/back" });
    expect(redirectTarget(r)).toBeUndefined();
    expect(redirectTarget({ ...r, status: "partial" })).toBeUndefined();
    expect(redirectTarget({ ...r, status: "partial", partial_ok: true })).toBe("https://shop.example/back?request_id=vreq_1&status=partial");
    expect(redirectTarget(request({ status: "completed" }))).toBeUndefined();
  });
});

describe("phoneCodeOf", () => {
  it("reads the code from each phone channel's deep link", () => {
    expect(phoneCodeOf("https://t.me/icv_test_bot?start=AB12CD")).toBe("AB12CD");
    expect(phoneCodeOf("https://wa.me/15550001000?text=AB12CD")).toBe("AB12CD");
    expect(phoneCodeOf("sms:+15550002000?body=AB12CD")).toBe("AB12CD");
    expect(phoneCodeOf("https://t.me/bot?start=not-a-code")).toBeUndefined();
    expect(phoneCodeOf(null)).toBeUndefined();
  });
});

describe("hostedAssets", () => {
  const config = parseConfig({ DATA_DIR: "/tmp/icv-hosted-unit" });
  const row = {
    status: "pending",
    channel: "telegram",
    deep_link: "https://t.me/b?start=QQ11WW",
    instruction: "Send it",
    challenge_message: null,
    challenge_expires_at: at,
    max_attempts: 5,
    attempts: 2,
  } as unknown as VerificationRow;

  it("offers every channel of the type, the allowed ones, or the set one; live requests only the configured ones", () => {
    const r = request({
      assets: [
        asset({ type: "phone" }),
        asset({ idx: 1, type: "phone", allowed_channels: ["sms", "telegram"] }),
        asset({ idx: 2, type: "phone", channel: "telegram" }),
      ],
    });
    const test = hostedAssets(r, new Map(), config);
    expect(test.map((a) => a.channels)).toEqual([["whatsapp", "telegram", "sms", "viber"], ["sms", "telegram"], ["telegram"]]);
    expect(test.map((a) => a.available)).toEqual(test.map((a) => a.channels));
    const live = hostedAssets({ ...r, environment: "live" }, new Map(), {
      ...config,
      TELEGRAM_BOT_USERNAME: "real_bot",
      TELEGRAM_BOT_TOKEN: "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0",
      TELEGRAM_WEBHOOK_SECRET: "telegram-webhook-secret",
    } as typeof config);
    expect(live.map((a) => a.available)).toEqual([["telegram"], ["telegram"], ["telegram"]]);
  });

  it("shows an open challenge with the phone code and the attempts left; none once it is not pending", () => {
    const r = request({
      assets: [asset({ type: "phone", channel: "telegram", identifier: "+37060000000", status: "in_progress", verification_id: "ver_1" })],
    });
    const [a] = hostedAssets(r, new Map([[0, row]]), config);
    expect(a).toMatchObject({
      status: "in_progress",
      method: "code",
      challenge: { code: "QQ11WW", instruction: "Send it", attemptsRemaining: 3 },
    });
    const [b] = hostedAssets(r, new Map([[0, { ...row, status: "failed" } as VerificationRow]]), config);
    expect(b).toMatchObject({ status: "failed", challenge: undefined });
  });
});
