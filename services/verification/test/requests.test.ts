// The request token of verification_url, the callback URL guard, and the request state machine as
// plain functions.
import { describe, expect, it } from "vitest";
import { createRequestToken, verificationUrl, verifyRequestToken } from "../src/requests/token.ts";
import { checkCallbackUrl } from "../src/callback-url.ts";
import { cancellation, expiry, progress } from "../src/requests/decide.ts";
import { MAX_ASSET_STARTS } from "../src/requests/input.ts";
import type { RequestAssetView, RequestView } from "../src/store/rows.ts";

const KEY = "k".repeat(44);
const now = new Date("2026-01-01T00:00:00.000Z");
const exp = new Date("2026-01-02T00:00:00.123Z");

describe("request token", () => {
  const token = createRequestToken(KEY, "vreq_1", exp);

  it("is valid for its request until its expiry, to the millisecond", () => {
    expect(verifyRequestToken(KEY, "vreq_1", token, now)).toEqual({ valid: true, expiresAt: exp });
    expect(verifyRequestToken(KEY, "vreq_1", token, new Date(exp.getTime() - 1)).valid).toBe(true);
    expect(verifyRequestToken(KEY, "vreq_1", token, exp)).toEqual({ valid: false, reason: "expired" });
  });

  it("is refused for another request, another key, a changed expiry or garbage", () => {
    expect(verifyRequestToken(KEY, "vreq_2", token, now)).toEqual({ valid: false, reason: "invalid_signature" });
    expect(verifyRequestToken("x".repeat(44), "vreq_1", token, now)).toEqual({ valid: false, reason: "invalid_signature" });
    const [e, mac] = token.split(".");
    const later = (parseInt(e, 36) + 86_400_000).toString(36);
    expect(verifyRequestToken(KEY, "vreq_1", `${later}.${mac}`, now)).toEqual({ valid: false, reason: "invalid_signature" });
    for (const bad of ["", "abc", `${e}.`, `${e}.${mac}x`, `${e}!.${mac}`])
      expect(verifyRequestToken(KEY, "vreq_1", bad, now)).toEqual({ valid: false, reason: "malformed" });
  });

  it("is deterministic (the same URL on every read) and sits in the URL fragment", () => {
    expect(createRequestToken(KEY, "vreq_1", exp)).toBe(token);
    expect(verificationUrl("https://icv.example", "vreq_1", token)).toBe(`https://icv.example/verify/vreq_1#${token}`);
  });
});

describe("callback_url guard", () => {
  const resolver = async (host: string) =>
    host === "public.example"
      ? [{ address: "93.184.216.34", family: 4 as const }]
      : host === "inside.example"
        ? [{ address: "10.0.0.7", family: 4 as const }]
        : [];

  it("accepts public http(s) targets", async () => {
    expect(await checkCallbackUrl("https://public.example/hook", false, resolver)).toBe("https://public.example/hook");
    expect(await checkCallbackUrl("http://93.184.216.34:8080/x", false, resolver)).toBe("http://93.184.216.34:8080/x");
  });

  it("refuses private, loopback, metadata and unresolvable targets unless private targets are allowed", async () => {
    for (const url of [
      "http://127.0.0.1:9/x",
      "http://[::1]/x",
      "http://169.254.169.254/latest",
      "https://inside.example/x",
      "https://nowhere.example/x",
      "http://10.1.2.3/",
      "http://[::127.0.0.1]/x",
      "http://[64:ff9b::a00:1]/",
    ]) {
      await expect(checkCallbackUrl(url, false, resolver), url).rejects.toMatchObject({ code: "validation_error" });
    }
    expect(await checkCallbackUrl("http://127.0.0.1:9/x", true, resolver)).toBe("http://127.0.0.1:9/x");
  });

  it("refuses what is not an http(s) URL without credentials", async () => {
    for (const url of ["ftp://public.example/", "not a url", "https://user:pw@public.example/", "javascript:alert(1)"]) {
      await expect(checkCallbackUrl(url, true, resolver), url).rejects.toMatchObject({ code: "validation_error" });
    }
  });
});

describe("state machine", () => {
  const asset = (
    idx: number,
    required: boolean,
    v_status: RequestAssetView["v_status"],
    status: RequestAssetView["status"] = v_status ? "in_progress" : "pending",
  ): RequestAssetView => ({
    request_id: "vreq_1",
    idx,
    type: "phone",
    identifier: null,
    channel: null,
    allowed_channels: null,
    required,
    status,
    verification_id: v_status ? `ver_${idx}` : null,
    v_status,
    proof_identifier_salt: null,
    proof_sd_jwt_vc: null,
    v_verified_at: v_status === "verified" ? now : null,
    proof_token: v_status === "verified" ? `tok${idx}` : null,
    proof_expires_at: v_status === "verified" ? exp : null,
    starts: v_status ? 1 : 0,
  });
  const request = (status: RequestView["status"], partialOk: boolean, assets: RequestAssetView[]): RequestView => ({
    id: "vreq_1",
    tenant_id: "ten_1",
    environment: "test",
    status,
    reference_id: "ref",
    action_type: "verification",
    action_title: null,
    action_description: null,
    redirect_url: null,
    callback_url: "https://cb.example/h",
    partial_ok: partialOk,
    external_user_id: null,
    client_metadata: null,
    created_at: now,
    updated_at: now,
    expires_at: exp,
    completed_at: null,
    cancelled_at: null,
    max_proof_age: null,
    assets,
  });

  it("pending → partial, with its event only when partial_ok", () => {
    const assets = [asset(0, true, "verified"), asset(1, true, "pending")];
    const quiet = progress(now)(request("pending", false, assets))!;
    expect(quiet).toEqual({ status: "partial", assets: [{ idx: 0, status: "verified" }], events: [] });
    const loud = progress(now)(request("pending", true, assets))!;
    expect(loud.events.map((e) => [e.eventType, e.aggregateType, e.aggregateId])).toEqual([["verification_request.partial", "verification_request", "vreq_1"]]);
    expect(loud.events[0].payload).toMatchObject({
      request_id: "vreq_1",
      reference_id: "ref",
      status: "partial",
      callback_url: "https://cb.example/h",
      proofs: [{ asset_index: 0, type: "phone", verification_id: "ver_0", proof_token: "tok0", expires_at: exp.toISOString() }],
    });
  });

  it("completes when every required asset is verified, whatever the optional ones", () => {
    const c = progress(now)(request("partial", false, [asset(0, true, "verified", "verified"), asset(1, false, "failed"), asset(2, true, "verified")]))!;
    expect(c.status).toBe("completed");
    expect(c.assets).toEqual([
      { idx: 1, status: "failed" },
      { idx: 2, status: "verified" },
    ]);
    expect(c.events.map((e) => e.eventType)).toEqual(["verification_request.completed"]);
    expect(c.events[0].payload.proofs).toHaveLength(2);
  });

  it("an optional verified asset alone only moves that asset; nothing moves a closed request", () => {
    expect(progress(now)(request("pending", true, [asset(0, false, "verified"), asset(1, true, null)]))).toEqual({
      status: "pending",
      assets: [{ idx: 0, status: "verified" }],
      events: [],
    });
    expect(progress(now)(request("pending", true, [asset(0, true, "pending", "in_progress")]))).toBeUndefined();
    for (const s of ["completed", "expired", "cancelled"] as const) {
      expect(progress(now)(request(s, true, [asset(0, true, "verified")]))).toBeUndefined();
      expect(expiry(now)(request(s, true, [asset(0, true, "pending")]))).toBeUndefined();
      expect(cancellation(now)(request(s, true, [asset(0, true, "pending")]))).toBeUndefined();
    }
  });

  it("an asset verified after expires_at does not complete the request (the expiry came first)", () => {
    const late = { ...asset(0, true, "verified"), v_verified_at: new Date(exp.getTime() + 1) };
    expect(progress(now)(request("pending", true, [late]))).toEqual({
      status: "pending",
      assets: [{ idx: 0, status: "verified" }],
      events: [],
    });
    const onTime = { ...asset(0, true, "verified"), v_verified_at: exp };
    expect(progress(now)(request("pending", true, [onTime]))!.status).toBe("completed");
  });

  it("an asset started more often than allowed stays failed, whatever its last verification shows, unless that was verified", () => {
    const over = { ...asset(0, true, "expired", "failed"), starts: MAX_ASSET_STARTS + 1 };
    expect(progress(now)(request("pending", false, [over, asset(1, true, "pending")]))).toBeUndefined();
    const moved = progress(now)(request("pending", false, [{ ...over, status: "in_progress", v_status: "pending" }, asset(1, true, "pending")]))!;
    expect(moved.assets).toEqual([{ idx: 0, status: "failed" }]);
    const won = progress(now)(request("pending", false, [{ ...over, v_status: "verified", v_verified_at: now }, asset(1, true, "verified")]))!;
    expect(won.status).toBe("completed");
    // at the most allowed starts it still follows its verification
    expect(progress(now)(request("pending", false, [{ ...over, starts: MAX_ASSET_STARTS }, asset(1, true, "pending")]))!.assets).toEqual([
      { idx: 0, status: "expired" },
    ]);
  });

  it("expiry sends its event and expires the unfinished assets; cancel sends none", () => {
    const assets = [asset(0, true, "verified", "verified"), asset(1, true, "pending"), asset(2, false, null)];
    const e = expiry(now)(request("partial", false, assets))!;
    expect(e).toMatchObject({
      status: "expired",
      expireVerifications: true,
      assets: [
        { idx: 1, status: "expired" },
        { idx: 2, status: "expired" },
      ],
    });
    expect(e.events.map((x) => [x.eventType, x.payload.status])).toEqual([["verification_request.expired", "expired"]]);
    const c = cancellation(now)(request("pending", false, assets))!;
    expect(c).toMatchObject({ status: "cancelled", expireVerifications: true, events: [] });
  });
});
