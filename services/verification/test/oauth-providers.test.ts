/** The provider table: what each provider's user answer yields, and the configuration a provider needs. */
import { describe, expect, it } from "vitest";
import { OAUTH_CHANNELS, parseConfig } from "@icv/platform";
import { CHANNEL_CONFIG } from "../src/channels/registry.ts";
import { PROVIDERS, providerSettings } from "../src/oauth/providers.ts";
import { parseLinkToken, startLink } from "../src/channels/shared/sign-in-link.ts";

describe("the provider table", () => {
  it("has one row per OAuth provider, each with https endpoints and scopes", () => {
    expect(Object.keys(PROVIDERS).sort()).toEqual([...OAUTH_CHANNELS].sort());
    for (const [name, row] of Object.entries(PROVIDERS)) {
      for (const url of [row.authorizationUrl, row.tokenUrl, row.userUrl]) expect(url, name).toMatch(/^https:\/\//);
      expect(row.scopes.length, name).toBeGreaterThan(0);
    }
  });

  it("takes an OIDC email only when the provider says it is verified", () => {
    for (const name of ["google", "linkedin"] as const) {
      expect(PROVIDERS[name].account({ sub: "1", email: "a@example.com", email_verified: true })).toEqual({
        handles: ["a@example.com"],
        subject: "1",
      });
      expect(PROVIDERS[name].account({ sub: "1", email: "a@example.com", email_verified: false })).toEqual({ handles: [], subject: "1" });
      expect(PROVIDERS[name].account({ sub: "1", email: "a@example.com", email_verified: "true" })).toEqual({ handles: [], subject: "1" });
    }
  });

  it("reads each provider's own JSON shape, and nothing from an answer without the account's id", () => {
    expect(PROVIDERS.github.account({ login: "octocat", id: 583231 })).toEqual({ handles: ["octocat"], subject: "583231" });
    expect(PROVIDERS.x.account({ data: { id: "12", username: "jack" } })).toEqual({ handles: ["jack"], subject: "12" });
    expect(PROVIDERS.youtube.account({ items: [{ id: "UC1", snippet: { customUrl: "@chan" } }] })).toEqual({
      handles: ["@chan", "UC1"],
      subject: "UC1",
    });
    expect(PROVIDERS.tiktok.account({ data: { user: { open_id: "o1", username: "tok" } } })).toEqual({ handles: ["tok"], subject: "o1" });
    expect(PROVIDERS.coinbase.account({ data: { id: "u1", email: "t@example.com" } })).toEqual({
      handles: ["t@example.com", "u1"],
      subject: "u1",
    });
    for (const name of Object.keys(PROVIDERS) as (keyof typeof PROVIDERS)[]) expect(PROVIDERS[name].account({}), name).toBeUndefined();
    expect(PROVIDERS.youtube.account({ items: [] })).toBeUndefined();
    expect(PROVIDERS.github.account({ login: ["octocat"], id: { x: 1 } })).toBeUndefined();
  });

  it("needs a client id and secret; endpoints default to the real ones and follow the configuration", () => {
    expect(providerSettings(parseConfig({ OAUTH_GITHUB_CLIENT_ID: "id" }, CHANNEL_CONFIG), "github")).toBeUndefined();
    const real = providerSettings(parseConfig({ OAUTH_GITHUB_CLIENT_ID: "id", OAUTH_GITHUB_CLIENT_SECRET: "s" }, CHANNEL_CONFIG), "github")!;
    expect(real).toMatchObject({ clientId: "id", clientSecret: "s", tokenUrl: "https://github.com/login/oauth/access_token" });
    const stand = providerSettings(
      parseConfig(
        {
          OAUTH_GITHUB_CLIENT_ID: "id",
          OAUTH_GITHUB_CLIENT_SECRET: "s",
          OAUTH_GITHUB_TOKEN_URL: "https://stand-in.example/token",
        },
        CHANNEL_CONFIG,
      ),
      "github",
    )!;
    expect(stand.tokenUrl).toBe("https://stand-in.example/token");
  });
});

describe("sign-in links", () => {
  it("carry the verification id and a 32-byte secret, and nothing else parses", () => {
    const secret = "ab".repeat(32);
    const link = new URL(startLink("https://verify.example.com", "github", "ver_01JABCDEFGHJKMNPQRSTVWXYZ0", secret));
    expect(link.pathname).toBe("/oauth/github/start");
    expect(parseLinkToken(link.searchParams.get("t")!)).toEqual({ verificationId: "ver_01JABCDEFGHJKMNPQRSTVWXYZ0", secret });
    for (const bad of [
      "",
      "ver_01JABCDEFGHJKMNPQRSTVWXYZ0",
      `ver_01JABCDEFGHJKMNPQRSTVWXYZ0.${"ab".repeat(31)}`,
      `vreq_01JABCDEFGHJKMNPQRSTVWXYZ0.${secret}`,
      `ver_01JABCDEFGHJKMNPQRSTVWXYZ0.${secret.toUpperCase()}`,
    ]) {
      expect(parseLinkToken(bad), bad).toBeUndefined();
    }
  });
});
