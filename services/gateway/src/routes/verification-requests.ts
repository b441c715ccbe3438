import { z } from "zod";
import type { Client } from "@connectrpc/connect";
import type { VerificationRequestService, VerificationRequest as RequestMsg } from "@icv/contracts/gen/icv/verification/v1/verification_request_service_pb.ts";
import { ACTION_TYPES, AppError, iso, type Config } from "@icv/platform";
import { scopeOf } from "../clients.ts";
import { idOf, idParams } from "../input.ts";
import { route, type RouteDef } from "../registry.ts";
import {
  assetChannel,
  assetType,
  channelInput,
  ErrorBody,
  HolderKey,
  REQUEST_ASSET_STATUSES,
  REQUEST_STATUSES,
  jsonObject,
  PageQuery,
  Pagination,
  ProofFormat,
  projectIdShown,
  timestamp,
  toPagination,
} from "../schemas.ts";

const VALIDITY_UNIT_S = { h: 3_600, d: 86_400, w: 604_800, m: 2_592_000 } as const;

/** max_proof_age, or validity_requirement in seconds (not both; 1 h to 1 year). */
function maxProofAgeOf(body: { max_proof_age?: number; validity_requirement?: string }): number | undefined {
  const fail = (message: string): never => {
    throw new AppError("validation_error", message, { details: [{ field: "validity_requirement", message, code: "invalid" }] });
  };
  if (body.validity_requirement === undefined) return body.max_proof_age;
  if (body.max_proof_age !== undefined) fail("give max_proof_age or validity_requirement, not both");
  const v = body.validity_requirement!;
  const seconds = Number(v.slice(0, -1)) * VALIDITY_UNIT_S[v.slice(-1) as keyof typeof VALIDITY_UNIT_S];
  if (seconds < 60 || seconds > 31_536_000) fail("validity_requirement must be from 1h to 1 year (365d)");
  return seconds;
}

const ActionContext = z
  .object({ title: z.string().min(1).max(200).optional(), description: z.string().min(1).max(1000).optional() })
  .strict()
  .describe("Shown to the end user on the hosted page");

const RequestAssetInput = z
  .object({
    type: assetType,
    identifier: z.string().min(1).max(320).nullable().optional().describe("null or absent: the end user gives it on the hosted page"),
    channel: channelInput(64, "Preferred channel; with an identifier, the verification is created at once").optional(),
    allowed_channels: z.array(channelInput(64)).min(1).max(10).optional().describe("Restricts the channels the user may choose"),
    required: z.boolean().optional().describe("Default true; at least one asset must be required"),
    proof_format: ProofFormat.optional(),
    holder_key: HolderKey.optional(),
  })
  .strict()
  .meta({ id: "RequestAssetInput" });

const CreateVerificationRequestBody = z
  .object({
    assets: z.array(RequestAssetInput).min(1).max(10),
    reference_id: z.string().min(1).max(255).optional().describe("Your tracking id (see GET /verification-requests/by-reference/{referenceId})"),
    action_type: z.enum(ACTION_TYPES).optional().describe("Default verification"),
    action_context: ActionContext.optional(),
    redirect_url: z.string().min(1).max(2048).optional().describe("Where the hosted page sends the user when done"),
    callback_url: z.string().min(1).max(2048).optional().describe("Receives the request's webhooks (public http(s) address)"),
    expires_in: z.number().int().min(60).max(604_800).optional().describe("Seconds; default 86400 (24 h), at most 604800 (7 days)"),
    partial_ok: z.boolean().optional().describe("Send verification_request.partial when some required assets are verified"),
    external_user_id: z.string().min(1).max(255).optional().describe("Your user id; given to the request's verifications"),
    client_metadata: jsonObject.optional(),
    max_proof_age: z
      .number()
      .int()
      .min(60)
      .max(31_536_000)
      .optional()
      .describe(
        "Smart reuse: seconds; existing proofs must have been verified at most this long before the request was created (60 to 31536000; default: any age)",
      ),
    validity_requirement: z
      .string()
      .regex(/^\d{1,6}[hdwm]$/, "must be a number and h, d, w or m (hours, days, weeks, 30-day months), e.g. 30d")
      .optional()
      .describe("The reference SDKs' form of max_proof_age: e.g. 12h, 30d, 2w, 6m (m: 30-day months); at most 1 year; not together with max_proof_age"),
    project_id: idOf("project")
      .optional()
      .describe(
        "The project whose branding and message templates and default callbacks (redirect_url) it uses; default: the default project. Another tenant's or environment's project is validation_error",
      ),
  })
  .strict()
  .meta({
    id: "CreateVerificationRequest",
    example: {
      assets: [
        { type: "email", identifier: "jane@example.com", channel: "email" },
        { type: "phone", allowed_channels: ["telegram", "whatsapp"] },
      ],
      reference_id: "order-1042",
      external_user_id: "user-42",
      redirect_url: "https://shop.example.com/verified",
    },
  });

const RequestAsset = z
  .object({
    index: z.number().int(),
    type: assetType,
    identifier: z.string().nullable(),
    channel: assetChannel.nullable(),
    allowed_channels: z.array(assetChannel).nullable(),
    required: z.boolean(),
    status: z.enum(REQUEST_ASSET_STATUSES),
    verification_id: z.string().nullable(),
    proof_format: ProofFormat,
    holder_key: HolderKey.optional(),
  })
  .meta({ id: "RequestAsset" });

const VerificationRequest = z
  .object({
    id: z.string(),
    status: z.enum(REQUEST_STATUSES),
    reference_id: z.string().nullable(),
    assets: z.array(RequestAsset),
    verification_url: z.string().describe("The hosted page; its #fragment token lets the end user act on this request until it expires"),
    created_at: timestamp,
    expires_at: timestamp,
    action_type: z.enum(ACTION_TYPES),
    action_context: z.object({ title: z.string().nullable(), description: z.string().nullable() }),
    redirect_url: z.string().nullable(),
    callback_url: z.string().nullable(),
    partial_ok: z.boolean(),
    external_user_id: z.string().nullable(),
    client_metadata: jsonObject.optional(),
    completed_at: timestamp.optional(),
    cancelled_at: timestamp.optional(),
    test_mode: z.boolean(),
    max_proof_age: z.number().int().optional().describe("Smart reuse: seconds, when the request bounds the age of reused proofs"),
    project_id: projectIdShown,
  })
  .meta({ id: "VerificationRequest" });

const VerificationRequestList = z.object({ data: z.array(VerificationRequest), pagination: Pagination }).meta({ id: "VerificationRequestList" });

const ListVerificationRequestsQuery = z
  .object({ ...PageQuery, status: z.enum(REQUEST_STATUSES).optional(), reference_id: z.string().min(1).max(255).optional() })
  .strict();

const ReferenceParams = z.object({ referenceId: z.string().min(1).max(255) });

// the request as it is now plus success (the spec's {success, status}; the reference SDKs read the request)
const CancelVerificationRequestResponse = VerificationRequest.extend({ success: z.literal(true), status: z.literal("cancelled") }).meta({
  id: "CancelVerificationRequestResult",
});

const err = (description: string) => ({ description, schema: ErrorBody });
const TAG = "Verification requests";

/** RPC message → REST verification request (snake_case, ISO timestamps, null where unset). */
export function toRestRequest(r: RequestMsg) {
  return {
    id: r.id,
    status: r.status,
    reference_id: r.referenceId ?? null,
    assets: r.assets.map((a) => ({
      index: a.index,
      type: a.type,
      identifier: a.identifier ?? null,
      channel: a.channel ?? null,
      allowed_channels: a.allowedChannels.length ? a.allowedChannels : null,
      required: a.required,
      status: a.status,
      verification_id: a.verificationId ?? null,
      proof_format: (a.proofFormat || "jwt") as "jwt" | "sd-jwt-vc",
      ...(a.holderKey ? { holder_key: a.holderKey } : {}),
    })),
    verification_url: r.verificationUrl,
    created_at: iso(r.createdAt),
    expires_at: iso(r.expiresAt),
    action_type: r.actionType,
    action_context: { title: r.actionContext?.title ?? null, description: r.actionContext?.description ?? null },
    redirect_url: r.redirectUrl ?? null,
    callback_url: r.callbackUrl ?? null,
    partial_ok: r.partialOk,
    external_user_id: r.externalUserId ?? null,
    ...(r.clientMetadata ? { client_metadata: r.clientMetadata } : {}),
    ...(r.completedAt ? { completed_at: iso(r.completedAt) } : {}),
    ...(r.cancelledAt ? { cancelled_at: iso(r.cancelledAt) } : {}),
    test_mode: r.testMode,
    ...(r.maxProofAge !== undefined ? { max_proof_age: r.maxProofAge } : {}),
    ...(r.projectId ? { project_id: r.projectId } : {}),
  };
}

export function verificationRequestRoutes(_config: Config, client: Client<typeof VerificationRequestService>): RouteDef[] {
  const c = client;
  return [
    route({
      method: "post",
      path: "/api/v1/verification-requests",
      tag: TAG,
      summary: "Create a verification request (several assets, a hosted page for the end user)",
      description:
        "Assets given with both identifier and channel get their verification at once (status in_progress, verification_id set), " +
        "so an API-only integration can complete them; the others start from the hosted page at verification_url.",
      auth: "key",
      body: CreateVerificationRequestBody,
      responses: {
        201: { description: "Created (status pending)", schema: VerificationRequest },
        400: err("validation_error, invalid_identifier, invalid_channel_for_type or channel_unavailable"),
      },
      async handler({ req, body }) {
        const r = await c.createVerificationRequest({
          scope: scopeOf(req),
          assets: body.assets.map((a) => ({
            type: a.type,
            identifier: a.identifier ?? undefined,
            channel: a.channel,
            allowedChannels: a.allowed_channels ?? [],
            required: a.required,
            proofFormat: a.proof_format,
            holderKey: a.holder_key as never,
          })),
          referenceId: body.reference_id,
          actionType: body.action_type,
          actionContext: body.action_context,
          redirectUrl: body.redirect_url,
          callbackUrl: body.callback_url,
          expiresIn: body.expires_in,
          partialOk: body.partial_ok,
          externalUserId: body.external_user_id,
          clientMetadata: body.client_metadata as never,
          maxProofAge: maxProofAgeOf(body),
          projectId: body.project_id,
        });
        return { status: 201, body: toRestRequest(r.request!) };
      },
    }),
    route({
      method: "get",
      path: "/api/v1/verification-requests",
      tag: TAG,
      summary: "List verification requests, newest first",
      description:
        "The key's tenant's verification requests in the key's environment, filtered by status or reference_id, a page at a time (page, limit up to 100).",
      auth: "key",
      query: ListVerificationRequestsQuery,
      responses: { 200: { description: "A page of requests", schema: VerificationRequestList }, 400: err("validation_error") },
      async handler({ req, query }) {
        const r = await c.listVerificationRequests({
          scope: scopeOf(req),
          page: { page: query.page ?? 1, limit: query.limit ?? 20 },
          status: query.status,
          referenceId: query.reference_id,
        });
        return { body: { data: r.requests.map(toRestRequest), pagination: toPagination(r.pageInfo!) } };
      },
    }),
    route({
      method: "get",
      path: "/api/v1/verification-requests/by-reference/{referenceId}",
      tag: TAG,
      summary: "The newest verification request with this reference_id",
      description: "Finds a request by the reference_id you gave at creation (your order or account id); when several share it, the newest.",
      auth: "key",
      params: ReferenceParams,
      responses: { 200: { description: "The request", schema: VerificationRequest }, 404: err("not_found") },
      async handler({ req, params }) {
        const r = await c.getVerificationRequestByReference({ scope: scopeOf(req), referenceId: params.referenceId });
        return { body: toRestRequest(r.request!) };
      },
    }),
    route({
      method: "get",
      path: "/api/v1/verification-requests/{id}",
      tag: TAG,
      summary: "Get a verification request with its assets",
      description: "One verification request of the key's tenant and environment, with each asset's status and verification_id, and its hosted page URL.",
      auth: "key",
      params: idParams("verificationRequest"),
      responses: { 200: { description: "The request", schema: VerificationRequest }, 404: err("not_found") },
      async handler({ req, params }) {
        const r = await c.getVerificationRequest({ scope: scopeOf(req), id: params.id });
        return { body: toRestRequest(r.request!) };
      },
    }),
    route({
      method: "delete",
      path: "/api/v1/verification-requests/{id}",
      tag: TAG,
      summary: "Cancel a pending or partial verification request (its pending verifications expire)",
      description:
        "Cancels the request: it becomes cancelled (no event) and its pending verifications expire. The answer is the cancelled request with success true (the spec's {success, status} and the reference SDKs' request object in one).",
      auth: "key",
      params: idParams("verificationRequest"),
      responses: {
        200: { description: "Cancelled", schema: CancelVerificationRequestResponse },
        404: err("not_found"),
        409: err("invalid_state: the request is completed, expired or cancelled"),
      },
      async handler({ req, params }) {
        const scope = scopeOf(req);
        await c.cancelVerificationRequest({ scope, id: params.id });
        const r = await c.getVerificationRequest({ scope, id: params.id });
        return { body: { ...toRestRequest(r.request!), success: true, status: "cancelled" } };
      },
    }),
  ];
}
