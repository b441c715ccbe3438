/** social/x: an X account, confirmed by signing in with X. */
import { describe, it, expect } from "vitest";
import { x } from "../../../src/channels/social/x.ts";
import { expectInvalid, normalize } from "../helpers.ts";
import { oauthCases } from "../oauth-cases.ts";

describe("social/x", () => {
  it("the account is a handle, compared in lower case", () => {
    expect(normalize("social", "x", "@Some.User")).toEqual({ value: "some.user", canonical: "some.user" });
    expectInvalid("social", "x", "some user");
  });

  it("is named X on the page", () => {
    expect(x.form.name).toBe("X");
  });

  oauthCases(x, "octocat");
});
