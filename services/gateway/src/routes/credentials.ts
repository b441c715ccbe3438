import { createHash } from "node:crypto";
import type { Config } from "@icv/platform";
import { z } from "zod";
import type { Clients } from "../clients.ts";
import { route, type RouteDef } from "../registry.ts";
import { ErrorBody } from "../schemas.ts";

/**
 * What a relying party needs to check an SD-JWT VC or a status list offline (DECISIONS.md, Proofs):
 * the issuers' metadata (draft-ietf-oauth-sd-jwt-vc: `{issuer, jwks_uri}`, the live issuer and the
 * test issuer, each naming its own key set only), the credential type's metadata at its `vct`, and
 * the Token Status Lists the proofs point at.
 */

const IssuerMetadata = z
  .object({ issuer: z.string(), jwks_uri: z.string() })
  .meta({ id: "JwtVcIssuerMetadata" })
  .describe("SD-JWT VC issuer metadata: the credential's iss and the key set its kid is in");

const TypeMetadata = z
  .object({
    vct: z.string(),
    name: z.string(),
    description: z.string(),
    display: z.array(z.object({ locale: z.string(), name: z.string(), description: z.string() })),
    claims: z.array(
      z.object({
        path: z.array(z.string()),
        sd: z.enum(["always", "never", "allowed"]),
        display: z.array(z.object({ locale: z.string(), label: z.string() })),
      }),
    ),
  })
  .meta({ id: "VctTypeMetadata" });

export const VCT_PATH = "/vct/asset-control";

const CLAIMS: [string, "always" | "never", string][] = [
  ["identifier", "always", "The asset's normalized identifier (disclosed only when the holder chooses)"],
  ["external_user_id", "always", "The tenant's own user id (disclosed only when the holder chooses)"],
  ["type", "never", "Asset type (phone, email, domain, social, wallet, account, telegram_bot)"],
  ["channel", "never", "Channel control was shown on"],
  ["method", "never", "How control was shown (reverse_otp, otp, signature, oauth, …)"],
  ["env", "never", "live, or test (a test credential never verifies with the live key set)"],
];

const ListParams = z.object({ list_id: z.string().max(24) }).strict();

export function credentialRoutes(config: Config, c: Clients): RouteDef[] {
  const base = config.publicBaseUrl;
  const issuer = (env: "live" | "test") =>
    route({
      method: "get",
      path: env === "live" ? "/.well-known/jwt-vc-issuer" : "/.well-known/jwt-vc-issuer/test",
      tag: "Proofs",
      summary:
        env === "live"
          ? "SD-JWT VC issuer metadata of live credentials (iss = the issuer; keys: jwks.json)"
          : "SD-JWT VC issuer metadata of test credentials (iss = the issuer + /test; keys: jwks-test.json)",
      description:
        env === "live"
          ? "SD-JWT VC issuer metadata (draft-ietf-oauth-sd-jwt-vc): the issuer of live credentials and where its keys are, so a verifier finds the keys from the credential's iss alone."
          : "The issuer metadata of test credentials: their iss is the issuer followed by /test and their keys are the test key set, so a test credential never verifies as a live one.",
      auth: "public",
      responses: { 200: { description: "The issuer metadata", schema: IssuerMetadata } },
      async handler() {
        const iss = env === "live" ? config.issuer : `${config.issuer.replace(/\/+$/, "")}/test`;
        return {
          headers: { "Cache-Control": "public, max-age=86400" },
          body: { issuer: iss, jwks_uri: `${base}/.well-known/${env === "live" ? "jwks.json" : "jwks-test.json"}` },
        };
      },
    });
  return [
    issuer("live"),
    issuer("test"),
    route({
      method: "get",
      path: VCT_PATH,
      tag: "Proofs",
      summary: "Type metadata of the asset-control credential (the SD-JWT VC's vct)",
      description:
        "The type metadata the SD-JWT VC's vct names: what an asset-control credential claims (type, channel, method, the selectively disclosable identifier and external_user_id) and how to show it.",
      auth: "public",
      responses: { 200: { description: "SD-JWT VC type metadata", schema: TypeMetadata } },
      async handler() {
        const description = "The holder showed control of an asset (a phone, an email address, a domain, an account, a wallet or a bot) to an ICV issuer.";
        return {
          headers: { "Cache-Control": "public, max-age=86400" },
          body: {
            vct: `${base}${VCT_PATH}`,
            name: "Asset control",
            description,
            display: [{ locale: "en-US", name: "Asset control", description }],
            claims: CLAIMS.map(([name, sd, label]) => ({ path: [name], sd, display: [{ locale: "en-US", label }] })),
          },
        };
      },
    }),
    route({
      method: "get",
      path: "/api/v1/proofs/status-lists/{list_id}",
      tag: "Proofs",
      summary: "A Token Status List (draft-ietf-oauth-status-list): the state of every proof that points at it",
      description:
        "Public. application/statuslist+jwt: a JWT signed by the list's own key set (live-…: jwks.json; test-…: jwks-test.json), payload " +
        "{sub, iat, exp, ttl: 300, status_list: {bits: 2, lst}}; lst is the zlib-deflated, base64url byte array, 2 bits per proof: " +
        "0 valid, 1 revoked, 2 suspended. A change shows here within 5 s; cache it up to ttl seconds.",
      auth: "public",
      params: ListParams,
      responses: {
        200: { description: "The status list token", contentType: "application/statuslist+jwt" },
        304: { description: "Not modified (If-None-Match)" },
        404: { description: "not_found: no such list", schema: ErrorBody },
      },
      async handler({ req, res, params }) {
        const { jwt } = await c.proof.getStatusList({ listId: params.list_id });
        const etag = `"${createHash("sha256").update(jwt).digest("base64url").slice(0, 27)}"`;
        res.setHeader("Cache-Control", "no-cache");
        res.setHeader("ETag", etag);
        if (req.get("if-none-match") === etag) return { status: 304 };
        res.type("application/statuslist+jwt").send(jwt);
        return {};
      },
    }),
  ];
}
