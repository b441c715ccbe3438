/** social/linkedin: a LinkedIn account, confirmed by signing in with LinkedIn. */
import { describe, it, expect } from "vitest";
import { linkedin } from "../../../src/channels/social/linkedin.ts";
import { expectInvalid, normalize } from "../helpers.ts";
import { oauthCases } from "../oauth-cases.ts";

describe("social/linkedin", () => {
  it("the account is its email address (OIDC sign-in)", () => {
    expect(normalize("social", "linkedin", "Jane.Doe@Example.COM")).toEqual({ value: "jane.doe@example.com", canonical: "jane.doe@example.com" });
    expectInvalid("social", "linkedin", "@jane");
  });

  it("is named LinkedIn on the page", () => {
    expect(linkedin.form.name).toBe("LinkedIn");
  });

  oauthCases(linkedin, "jane.doe@example.com");
});
