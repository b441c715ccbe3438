/**
 * OAuth sign-in, public (the end user's browser): `GET /oauth/{channel}/start?t=…` sends the user
 * to the provider (or shows a page: test mode, a spent link, …); `GET /oauth/{channel}/callback`
 * is where the provider sends them back. The verification service does the work; this file only
 * carries the query in and the outcome out (a redirect or oauth-page.ts).
 */
import type { Client } from "@connectrpc/connect";
import { z } from "zod";
import type { VerificationService } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import { OAUTH_CHANNELS } from "@icv/platform";
import { sendOAuthPage } from "../hosted/oauth-page.ts";
import { route, type RouteDef } from "../registry.ts";

const TAG = "OAuth sign-in";
const Channel = z.object({
  channel: z
    .string()
    .regex(/^[a-z]{1,16}$/, "channel must be a channel name")
    .meta({ enum: [...OAUTH_CHANNELS], description: "A channel signed in with its provider (social channels and coinbase)" }),
});
const StartQuery = z.object({ t: z.string().min(1).max(256).describe("the sign-in link's single-use token") });
/** The provider's answer: code and state (or error), and what else it sends (iss, scope, …). */
const CallbackQuery = z.record(z.string().max(64), z.string().max(2048)).refine((q) => Object.keys(q).length <= 20, "too many parameters");
const html = (description: string) => ({ description, contentType: "text/html" });

export function oauthRoutes(verification: Client<typeof VerificationService>): RouteDef[] {
  return [
    route({
      method: "get",
      path: "/oauth/{channel}/start",
      tag: TAG,
      summary: "Start signing in with the provider (the challenge's deep_link of social and coinbase verifications)",
      description: "Live: 303 to the provider's authorization page. The link works once; a test verification shows a test page instead.",
      auth: "public",
      params: Channel,
      query: StartQuery,
      responses: {
        303: { description: "To the provider" },
        200: html("A page: test mode, or why the link cannot be used (spent, changed, expired)"),
        400: { description: "validation_error" },
      },
      async handler({ res, params, query }) {
        const { outcome } = await verification.startOAuthSignIn({ channel: params.channel, token: query.t });
        res.setHeader("Referrer-Policy", "no-referrer");
        res.setHeader("Cache-Control", "no-store");
        if (outcome?.outcome === "redirect" && outcome.authorizationUrl) res.redirect(303, outcome.authorizationUrl);
        else sendOAuthPage(res, outcome!);
        return {};
      },
    }),
    route({
      method: "get",
      path: "/oauth/{channel}/callback",
      tag: TAG,
      summary: "The provider's redirect back after sign-in: the account is compared and the verification completed or its attempt failed",
      description: "Register {PUBLIC_BASE_URL}/oauth/{channel}/callback as the app's redirect URI at the provider. Answers a page for the end user.",
      auth: "public",
      params: Channel,
      query: CallbackQuery,
      responses: {
        200: html("A page: verified, wrong account (identifier_mismatch), expired, cancelled, or a link that is not valid"),
        400: { description: "validation_error" },
      },
      async handler({ res, params, query }) {
        const { outcome } = await verification.completeOAuthSignIn({ channel: params.channel, params: query });
        sendOAuthPage(res, outcome!);
        return {};
      },
    }),
  ];
}
