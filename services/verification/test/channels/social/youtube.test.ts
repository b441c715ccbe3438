/** social/youtube: a YouTube account, confirmed by signing in with YouTube. */
import { describe, it, expect } from "vitest";
import { youtube } from "../../../src/channels/social/youtube.ts";
import { expectInvalid, normalize } from "../helpers.ts";
import { oauthCases } from "../oauth-cases.ts";

describe("social/youtube", () => {
  it("the account is a handle, compared in lower case", () => {
    expect(normalize("social", "youtube", "@Some.User")).toEqual({ value: "some.user", canonical: "some.user" });
    expectInvalid("social", "youtube", "some user");
  });

  it("is named YouTube on the page", () => {
    expect(youtube.form.name).toBe("YouTube");
  });

  oauthCases(youtube, "octocat");
});
