/** social/facebook: a Facebook account, confirmed by signing in with Facebook. */
import { describe, it, expect } from "vitest";
import { facebook } from "../../../src/channels/social/facebook.ts";
import { expectInvalid, normalize } from "../helpers.ts";
import { oauthCases } from "../oauth-cases.ts";

describe("social/facebook", () => {
  it("the account is a handle, compared in lower case", () => {
    expect(normalize("social", "facebook", "@Some.User")).toEqual({ value: "some.user", canonical: "some.user" });
    expectInvalid("social", "facebook", "some user");
  });

  it("is named Facebook on the page", () => {
    expect(facebook.form.name).toBe("Facebook");
  });

  oauthCases(facebook, "octocat");
});
