/** social/github: a GitHub account, confirmed by signing in with GitHub. */
import { describe, it, expect } from "vitest";
import { github } from "../../../src/channels/social/github.ts";
import { expectInvalid, normalize } from "../helpers.ts";
import { oauthCases } from "../oauth-cases.ts";

describe("social/github", () => {
  it("the account is a handle, compared in lower case", () => {
    expect(normalize("social", "github", "@Some.User")).toEqual({ value: "some.user", canonical: "some.user" });
    expectInvalid("social", "github", "some user");
  });

  it("is named GitHub on the page", () => {
    expect(github.form.name).toBe("GitHub");
  });

  oauthCases(github, "octocat");
});
