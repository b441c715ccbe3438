/** social/google: a Google account, confirmed by signing in with Google. */
import { describe, it, expect } from "vitest";
import { google } from "../../../src/channels/social/google.ts";
import { expectInvalid, normalize } from "../helpers.ts";
import { oauthCases } from "../oauth-cases.ts";

describe("social/google", () => {
  it("the account is its email address (OIDC sign-in)", () => {
    expect(normalize("social", "google", "Jane.Doe@Example.COM")).toEqual({ value: "jane.doe@example.com", canonical: "jane.doe@example.com" });
    expectInvalid("social", "google", "@jane");
  });

  it("is named Google on the page", () => {
    expect(google.form.name).toBe("Google");
  });

  oauthCases(google, "jane.doe@example.com");
});
