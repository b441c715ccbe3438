/** Social handles, and the accounts given as an email address (google, linkedin). */
import { describe, it, expect } from "vitest";
import { maskAccount } from "../../../src/channels/shared/mask.ts";
import { expectInvalid, normalize } from "../helpers.ts";

describe("social handles", () => {
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
    expect(normalize("social", "github", raw)).toEqual({ value: expected, canonical: expected });
  });

  it("behaves the same for every social channel whose handle is a name", () => {
    for (const channel of ["github", "facebook", "x", "instagram", "youtube", "tiktok"]) {
      expect(normalize("social", channel, "@Some.User").value).toBe("some.user");
    }
  });

  it("google and linkedin: the handle is the account's email address (OIDC)", () => {
    for (const channel of ["google", "linkedin"]) {
      expect(normalize("social", channel, "Jane.Doe@Example.COM")).toEqual({
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

describe("masking an account", () => {
  it("as an email address when it is one, else as a handle", () => {
    expect(maskAccount("johndoe")).toBe("j***");
    expect(maskAccount("john.doe_99")).toBe("john***e_99");
    expect(maskAccount("user.name@example.com")).toBe("u***e@example.com");
  });
});
