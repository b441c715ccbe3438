import type { Client } from "@connectrpc/connect";
import type { Request, Response } from "express";
import QRCode from "qrcode";
import { z } from "zod";
import type { VerificationRequestService, HostedRequest } from "@icv/contracts/gen/icv/verification/v1/verification_request_service_pb.ts";
import { ACTION_TYPES, AppError, CHALLENGE_METHODS, isPlaceholderBotLink, iso, type Config, type PhoneDelivery as PhoneDeliveryWord } from "@icv/platform";
import { DOMAIN_CHECK_CALL } from "../clients.ts";
import type { HostedHub, HostedState } from "../hosted/hub.ts";
import { idParams } from "../input.ts";
import { route, type RouteDef } from "../registry.ts";
import { assetChannel, assetType, channelInput, ErrorBody, PhoneDelivery, REQUEST_ASSET_STATUSES, REQUEST_STATUSES } from "../schemas.ts";
import { DomainCheck, toRestCheck } from "./domain-check.ts";
import { brandingBody, HostedBranding } from "../hosted/branding.ts";

const err = (description: string) => ({ description, schema: ErrorBody });
const TAG = "Hosted page";
export const TOKEN_HEADER = "x-request-token";

const Params = idParams("verificationRequest");
const AssetParams = Params.extend({
  assetIndex: z
    .string()
    .regex(/^\d{1,2}$/, "assetIndex must be a whole number")
    .transform(Number),
});
const StartBody = z
  .object({
    identifier: z.string().min(1).max(320).optional(),
    channel: channelInput(32).optional(),
    delivery: PhoneDelivery.optional().describe("Phone: inbound (default; send the shown code from the phone) or outbound (sms, whatsapp: we send a code)"),
  })
  .strict()
  .meta({ id: "HostedStart" });
const SubmitBody = z
  .object({
    challenge_code: z.string().max(64).optional(),
    signature: z.string().max(8192).optional(),
    bot_token: z.string().max(256).optional(),
    api_key: z.string().max(256).optional(),
    api_secret: z.string().max(512).optional(),
  })
  .strict()
  .meta({ id: "HostedSubmit" });
const EventsQuery = z.object({ token: z.string().max(128).optional() });

const HostedChallenge = z.object({
  code: z.string().optional(),
  instruction: z.string(),
  deep_link: z.string().optional(),
  qr_code: z.string().optional().describe("data: URI of a PNG QR code of deep_link (phone channels)"),
  message: z.string().optional(),
  expires_at: z.string(),
  attempts_remaining: z.number().int(),
});
const HostedForm = z
  .object({
    name: z.string().describe("The channel's name on the page"),
    deliveries: z
      .array(z.object({ way: z.enum(["inbound", "outbound"]), label: z.string() }))
      .describe("Phone channels: the ways a code may travel that the start form offers, with their words, the default first"),
    step: z
      .enum(["send_code", "enter_code", "sign", "sign_in", "api_key", "domain_check", "bot_token"])
      .describe("What the started step is: send_code (reverse OTP: the code is shown, no input), enter_code, sign, sign_in, api_key, domain_check, bot_token"),
    fields: z.array(
      z.object({
        name: z.enum(["challenge_code", "signature", "bot_token", "api_key", "api_secret"]),
        label: z.string(),
        input: z.enum(["text", "textarea", "password"]),
      }),
    ),
    browser_wallet: z.literal("eip1193").optional().describe("A browser wallet the page may ask to sign (EIP-1193 personal_sign)"),
    publishes: z.enum(["dns_record", "http_file"]).optional().describe("Domain checks: what the user publishes"),
  })
  .meta({ id: "HostedForm" });
const HostedAsset = z.object({
  index: z.number().int(),
  type: assetType,
  identifier: z.string().nullable(),
  channel: assetChannel.nullable(),
  channels: z.array(assetChannel),
  available_channels: z.array(assetChannel),
  forms: z
    .record(z.string(), HostedForm)
    .describe("The form of each of channels (and of the open challenge's channel), keyed by channel: the page names no channel itself"),
  required: z.boolean(),
  status: z.enum(REQUEST_ASSET_STATUSES),
  verification_id: z.string().nullable(),
  method: z.enum(CHALLENGE_METHODS).nullable().describe("How the user completes the asset's challenge (the page's form for it)"),
  delivery: PhoneDelivery.nullable().describe("Phone, while open: inbound (code shown, sent from the phone) or outbound (code sent to the phone)"),
  challenge: HostedChallenge.nullable(),
  domain: z
    .object({
      dns_record: z.object({ type: z.literal("TXT"), name: z.string(), value: z.string() }).optional(),
      http_file: z.object({ path: z.string(), content: z.string() }).optional(),
      check_count: z.number().int(),
      last_check: DomainCheck.optional(),
      next_recheck_at: z.string().optional().describe("Verified, with scheduled re-checks: when the next one is due"),
    })
    .optional()
    .describe(
      "Domain assets checked by DNS or HTTP: while open, what to publish and what the last check saw; once verified, when control was last re-checked and what it saw",
    ),
});
export const HostedRequestBody = z
  .object({
    id: z.string(),
    status: z.enum(REQUEST_STATUSES),
    action_type: z.enum(ACTION_TYPES),
    action_context: z.object({ title: z.string().nullable(), description: z.string().nullable() }),
    assets: z.array(HostedAsset),
    expires_at: z.string(),
    test_mode: z.boolean(),
    partial_ok: z.boolean(),
    has_redirect: z.boolean(),
    redirect_to: z.string().nullable(),
    token_expired: z.boolean(),
    branding: HostedBranding.nullable().describe("The request's project branding; logo_url is the gateway's same-origin logo proxy"),
  })
  .meta({ id: "HostedRequest" });

/** A QR code PNG (data: URI) of a phone challenge's deep link, so a laptop user can scan it with the phone. */
const qrOf = (link: string) => QRCode.toDataURL(link, { errorCorrectionLevel: "M", margin: 2, scale: 6 });

/** A domain asset's check on the page: the record or file to publish, how many checks ran, what the last one saw. */
function hostedDomain(d: HostedRequest["assets"][number]["domain"]) {
  if (!d) return {};
  const last = toRestCheck(d.lastCheck);
  return {
    domain: {
      ...(d.dnsRecord ? { dns_record: { type: "TXT" as const, name: d.dnsRecord.name, value: d.dnsRecord.value } } : {}),
      ...(d.httpFile ? { http_file: { path: d.httpFile.path, content: d.httpFile.content } } : {}),
      check_count: d.checkCount,
      ...(last ? { last_check: last } : {}),
      ...(d.nextRecheckAt ? { next_recheck_at: iso(d.nextRecheckAt) } : {}),
    },
  };
}

/** A channel's form on the page (RPC → JSON). */
const hostedForm = (f: HostedRequest["assets"][number]["forms"][string]) => ({
  name: f.name,
  deliveries: f.deliveries.map((d) => ({ way: d.way as "inbound" | "outbound", label: d.label })),
  step: f.step as z.infer<typeof HostedForm>["step"],
  fields: f.fields.map((x) => ({
    name: x.name as z.infer<typeof HostedForm>["fields"][number]["name"],
    label: x.label,
    input: x.input as z.infer<typeof HostedForm>["fields"][number]["input"],
  })),
  ...(f.browserWallet ? { browser_wallet: f.browserWallet as "eip1193" } : {}),
  ...(f.publishes ? { publishes: f.publishes as "dns_record" | "http_file" } : {}),
});

/** RPC message → the page's JSON (snake_case, ISO timestamps, null where unset); tenantName: the tenant's, when the project has no business name. */
export async function toHostedBody(r: HostedRequest, tenantName?: (id: string) => Promise<string | undefined>) {
  // no button or QR code to the placeholder bot of test mode (not ours)
  const link = (l: string | undefined) => (l && !isPlaceholderBotLink(l) ? l : undefined);
  return {
    id: r.id,
    status: r.status,
    action_type: r.actionType,
    action_context: { title: r.actionContext?.title ?? null, description: r.actionContext?.description ?? null },
    assets: await Promise.all(
      r.assets.map(async (a) => ({
        index: a.index,
        type: a.type,
        identifier: a.identifier ?? null,
        channel: a.channel ?? null,
        channels: a.channels,
        available_channels: a.availableChannels,
        required: a.required,
        status: a.status,
        verification_id: a.verificationId ?? null,
        method: a.method ?? null,
        delivery: (a.delivery ?? null) as PhoneDeliveryWord | null,
        challenge: a.challenge
          ? {
              ...(a.challenge.code ? { code: a.challenge.code } : {}),
              instruction: a.challenge.instruction,
              ...(link(a.challenge.deepLink) ? { deep_link: a.challenge.deepLink } : {}),
              ...(link(a.challenge.deepLink) && a.type === "phone" ? { qr_code: await qrOf(a.challenge.deepLink!) } : {}),
              ...(a.challenge.message ? { message: a.challenge.message } : {}),
              expires_at: iso(a.challenge.expiresAt)!,
              attempts_remaining: a.challenge.attemptsRemaining,
            }
          : null,
        ...hostedDomain(a.domain),
        // last: the status and what the user does come first in each asset
        forms: Object.fromEntries(Object.entries(a.forms).map(([channel, f]) => [channel, hostedForm(f)])),
      })),
    ),
    expires_at: iso(r.expiresAt)!,
    test_mode: r.testMode,
    partial_ok: r.partialOk,
    has_redirect: r.hasRedirect,
    redirect_to: r.redirectTo ?? null,
    token_expired: r.tokenExpired,
    branding: brandingBody(r.branding, r.branding?.businessName ? undefined : await tenantName?.(r.tenantId)),
  };
}

/** The request token: header X-Request-Token (the page never puts it in a URL, except the event stream's). */
function tokenOf(req: Request): string {
  const t = req.get(TOKEN_HEADER);
  if (!t) throw new AppError("not_found", "verification request not found");
  return t;
}

/** Nothing of the page's API may be cached or leak the page URL onwards. */
function privateHeaders(res: Response): void {
  res.setHeader("Cache-Control", "no-store");
  res.setHeader("Referrer-Policy", "no-referrer");
}

const DESCRIPTION = `The hosted page's API: no API key, authorised by the token in the verification_url fragment, sent in the
\`X-Request-Token\` header. It authorises that one request until it expires: a wrong or another request's token answers
404 not_found; actions on an expired request answer 410 request_expired (GET then answers the final status only).`;

/** The hosted page's API under /api/v1/verify/request/{id} (public routes, per-IP limits). */
export function hostedRoutes(
  _config: Config,
  hub: HostedHub | undefined,
  client: Client<typeof VerificationRequestService>,
  tenantName?: (id: string) => Promise<string | undefined>,
): RouteDef[] {
  const c = client;
  const toBody = (r: HostedRequest) => toHostedBody(r, tenantName);
  const base = "/api/v1/verify/request/{id}";
  const assetErrors = {
    400: err("validation_error, invalid_identifier, invalid_code, invalid_signature, challenge_expired, channel_unavailable"),
    403: err("test_mode_required (test-verify of a live request)"),
    404: err("not_found: unknown request, wrong token or asset"),
    409: err("invalid_state or already_verified"),
    410: err("request_expired"),
  };
  return [
    route({
      method: "get",
      path: base,
      tag: TAG,
      summary: "The hosted page's view of a request (X-Request-Token)",
      description: DESCRIPTION,
      auth: "public",
      params: Params,
      responses: { 200: { description: "The request as the page shows it", schema: HostedRequestBody }, 404: err("not_found") },
      async handler({ req, res, params }) {
        privateHeaders(res);
        const r = await c.getHostedRequest({ requestId: params.id, token: tokenOf(req) });
        return { body: await toBody(r.request!) };
      },
    }),
    route({
      method: "post",
      path: `${base}/assets/{assetIndex}/start`,
      tag: TAG,
      summary: "Start (or restart) an asset from the hosted page: identifier where the request left it null, channel among the allowed ones",
      description:
        "Answers the page state; the asset's challenge holds the code, deep link and QR (phone), the message to sign (wallet), the sign-in link (social, account) or the record to publish (domain). Email codes are mailed.",
      auth: "public",
      params: AssetParams,
      body: StartBody,
      responses: {
        200: { description: "The page state", schema: HostedRequestBody },
        ...assetErrors,
        400: err("validation_error, invalid_identifier, channel_unavailable, or max_attempts_exceeded: the asset was started 3 times and has now failed"),
        429: err("resend_too_soon, or rate_limited: a send limit (docs/send-limits.md); Retry-After says when"),
      },
      async handler({ req, res, params, body }) {
        privateHeaders(res);
        const r = await c.startHostedAsset({
          requestId: params.id,
          token: tokenOf(req),
          assetIndex: params.assetIndex,
          identifier: body.identifier,
          channel: body.channel,
          delivery: body.delivery,
        });
        return { body: await toBody(r.request!) };
      },
    }),
    route({
      method: "post",
      path: `${base}/assets/{assetIndex}/submit`,
      tag: TAG,
      summary: "Answer an asset's challenge from the hosted page (code, signature or bot token)",
      description:
        "The hosted page's call, authorised by the request token in X-Request-Token (from the page URL's fragment, never an API key): completes the asset's verification with what the user entered.",
      auth: "public",
      params: AssetParams,
      body: SubmitBody,
      responses: { 200: { description: "The page state", schema: HostedRequestBody }, ...assetErrors },
      async handler({ req, res, params, body }) {
        privateHeaders(res);
        const r = await c.submitHostedAsset({
          requestId: params.id,
          token: tokenOf(req),
          assetIndex: params.assetIndex,
          challengeCode: body.challenge_code,
          signature: body.signature,
          botToken: body.bot_token,
          apiKey: body.api_key,
          apiSecret: body.api_secret,
        });
        return { body: await toBody(r.request!) };
      },
    }),
    route({
      method: "post",
      path: `${base}/assets/{assetIndex}/test-verify`,
      tag: TAG,
      summary: "Complete a started asset at once (test-mode requests only)",
      description:
        "For requests made with a test key: completes the asset's started verification as test-verify would, so a test integration can walk the hosted page without a phone or mailbox.",
      auth: "public",
      params: AssetParams,
      responses: { 200: { description: "The page state", schema: HostedRequestBody }, ...assetErrors },
      async handler({ req, res, params }) {
        privateHeaders(res);
        const r = await c.testVerifyHostedAsset({ requestId: params.id, token: tokenOf(req), assetIndex: params.assetIndex });
        return { body: await toBody(r.request!) };
      },
    }),
    hostedCheckRoute(c, base, assetErrors, toBody),
    route({
      method: "get",
      path: `${base}/events`,
      tag: TAG,
      summary: "Server-sent events of the hosted page: connected, then request (the page state) on every change",
      description:
        "The token comes as `?token=` here (an EventSource cannot set headers). `connected` first, then `request` with the " +
        "page state (the GET shape) whenever it changes; a `: heartbeat` comment every SSE_HEARTBEAT_MS. The stream ends after a final state.",
      auth: "public",
      params: Params,
      query: EventsQuery,
      responses: {
        200: { description: "text/event-stream: connected, request…", contentType: "text/event-stream" },
        404: err("not_found"),
        429: err("too_many_connections or rate_limited"),
      },
      handler: hub
        ? async ({ res, params, query }) => {
            privateHeaders(res);
            const token = query.token;
            if (!token) throw new AppError("not_found", "verification request not found");
            const read = async () => (await toBody((await c.getHostedRequest({ requestId: params.id, token })).request!)) as HostedState;
            await hub.open(res, params.id, read);
            return {};
          }
        : undefined,
    }),
  ];
}

/** The page's "check now" of a domain asset (DNS or HTTP): one check per 5 s, like the API's. */
function hostedCheckRoute(
  c: Client<typeof VerificationRequestService>,
  base: string,
  errors: Record<number, { description: string; schema: typeof ErrorBody }>,
  toBody: (r: HostedRequest) => ReturnType<typeof toHostedBody>,
): RouteDef {
  return route({
    method: "post",
    path: `${base}/assets/{assetIndex}/check`,
    tag: TAG,
    summary: "Check a domain asset now (its DNS record or HTTP file); the page state shows what the check saw",
    description:
      "The hosted page's check of a domain asset: looks up the TXT record or fetches the HTTP file now, verifies the asset when it is there, and otherwise records what was seen for the page to show.",
    auth: "public",
    params: AssetParams,
    responses: {
      200: { description: "The page state", schema: HostedRequestBody },
      ...errors,
      429: err("rate_limited: one check per 5 s; Retry-After says when"),
      503: err("service_unavailable: the domain service is down"),
    },
    async handler({ req, res, params }) {
      privateHeaders(res);
      const r = await c.checkHostedAsset({ requestId: params.id, token: tokenOf(req), assetIndex: params.assetIndex }, DOMAIN_CHECK_CALL);
      return { body: await toBody(r.request!) };
    },
  });
}
