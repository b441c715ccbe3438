/** social/tiktok: a TikTok account, confirmed by signing in with TikTok. */
import { describe, it, expect } from "vitest";
import { tiktok } from "../../../src/channels/social/tiktok.ts";
import { expectInvalid, normalize } from "../helpers.ts";
import { oauthCases } from "../oauth-cases.ts";

describe("social/tiktok", () => {
  it("the account is a handle, compared in lower case", () => {
    expect(normalize("social", "tiktok", "@Some.User")).toEqual({ value: "some.user", canonical: "some.user" });
    expectInvalid("social", "tiktok", "some user");
  });

  it("is named TikTok on the page", () => {
    expect(tiktok.form.name).toBe("TikTok");
  });

  oauthCases(tiktok, "octocat");
});
