/** The social channel: handle normalization. */
import { describe, it, expect } from "vitest";
import { normalizeIdentifier } from "../../src/channels/index.ts";
import { expectInvalid } from "./helpers.ts";
import { social } from "../../src/channels/social.ts";
import { CTX, pending, rejection } from "./helpers.ts";

describe("social", () => {
  const valid: Array<[string, string]> = [
    ["@JohnDoe", "johndoe"],
    ["JohnDoe", "johndoe"],
    ["  @john.doe_99-x  ", "john.doe_99-x"],
    ["a", "a"],
    ["@A", "a"],
    ["x".repeat(100), "x".repeat(100)],
    [`@${"Y".repeat(100)}`, "y".repeat(100)],
  ];
  it.each(valid)("normalizes %j to %s", (raw, expected) => {
    expect(normalizeIdentifier("social", "github", raw)).toEqual({ value: expected, canonical: expected });
  });

  it("behaves the same for every social channel whose handle is a name", () => {
    for (const channel of ["github", "facebook", "x", "instagram", "youtube", "tiktok"]) {
      expect(normalizeIdentifier("social", channel, "@Some.User").value).toBe("some.user");
    }
  });

  it("google and linkedin: the handle is the account's email address (OIDC)", () => {
    for (const channel of ["google", "linkedin"]) {
      expect(normalizeIdentifier("social", channel, "Jane.Doe@Example.COM")).toEqual({
        value: "jane.doe@example.com",
        canonical: "jane.doe@example.com",
      });
      expectInvalid("social", channel, "@jane");
    }
  });

  const invalid: Array<[string, string]> = [
    ["only @", "@"],
    ["double @", "@@john"],
    ["space inside", "john doe"],
    ["space after @", "@ john"],
    ["punctuation", "john!"],
    ["slash (URL)", "github.com/john"],
    ["non-ASCII letter", "jöhn"],
    ["over 100 characters", "x".repeat(101)],
  ];
  it.each(invalid)("rejects %s", (_name, raw) => {
    expectInvalid("social", "github", raw);
  });
});

// ---------------------------------------------------------------------------------------------
// account

describe("social evidence (complete)", () => {
  it("OAuth: completed by signing in, never by a submit", async () => {
    expect(social.method("github")).toBe("oauth");
    expect(
      await rejection(() => social.complete(pending({ type: "social", channel: "github", identifier: "johndoe" }), { challengeCode: "K7P2QX" }, CTX)),
    ).toBe("invalid_state");
  });
});
