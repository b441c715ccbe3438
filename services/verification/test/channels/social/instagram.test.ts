/** social/instagram: a Instagram account, confirmed by signing in with Instagram. */
import { describe, it, expect } from "vitest";
import { instagram } from "../../../src/channels/social/instagram.ts";
import { expectInvalid, normalize } from "../helpers.ts";
import { oauthCases } from "../oauth-cases.ts";

describe("social/instagram", () => {
  it("the account is a handle, compared in lower case", () => {
    expect(normalize("social", "instagram", "@Some.User")).toEqual({ value: "some.user", canonical: "some.user" });
    expectInvalid("social", "instagram", "some user");
  });

  it("is named Instagram on the page", () => {
    expect(instagram.form.name).toBe("Instagram");
  });

  oauthCases(instagram, "octocat");
});
