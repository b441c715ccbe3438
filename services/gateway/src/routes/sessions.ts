import { z } from "zod";
import type { Session as SessionMsg } from "@icv/contracts/gen/icv/session/v1/session_service_pb.ts";
import QRCode from "qrcode";
import { AppError, iso, isPlaceholderBotLink, MESSAGING_CHANNELS, type MessagingChannel } from "@icv/platform";
import { scopeOf, type Clients } from "../clients.ts";
import { idOf, idParams } from "../input.ts";
import { route, type RouteDef } from "../registry.ts";
import { ErrorBody, jsonObject, projectIdShown, timestamp } from "../schemas.ts";

// the messaging provider table (@icv/platform messaging/registry.ts)
const SESSION_CHANNELS = MESSAGING_CHANNELS as [MessagingChannel, ...MessagingChannel[]];
const context = jsonObject.optional().describe("The reference SDKs' name of client_metadata (give one of the two); answered as client_metadata");

/** client_metadata, or its alias context (the reference SDKs' name); both at once must be equal. */
function metadataOf(b: { client_metadata?: Record<string, unknown>; context?: Record<string, unknown> }): Record<string, unknown> | undefined {
  if (b.client_metadata !== undefined && b.context !== undefined && JSON.stringify(b.client_metadata) !== JSON.stringify(b.context)) {
    throw new AppError("validation_error", "give client_metadata or its alias context, not two different objects", {
      details: [{ field: "context", message: "differs from client_metadata", code: "invalid" }],
    });
  }
  return b.client_metadata ?? b.context;
}
const projectId = idOf("project")
  .optional()
  .describe(
    "The project whose branding and message templates it uses; default: the default project. Another tenant's or environment's project is validation_error",
  );
const AUTH_SESSION_TYPES = ["2fa", "login", "recovery"] as const;

const CreateSessionBody = z
  .object({ channel: z.enum(SESSION_CHANNELS), client_metadata: jsonObject.optional(), context, project_id: projectId })
  .strict()
  .meta({ id: "CreateSession", example: { channel: "telegram", client_metadata: { signup: "web" } } });

const CreateAuthSessionBody = z
  .object({
    channel: z.enum(SESSION_CHANNELS),
    phone_number: z.string().min(1).max(64).describe("The number that must answer, E.164"),
    type: z.enum(AUTH_SESSION_TYPES).optional().describe("Default 2fa"),
    client_metadata: jsonObject.optional(),
    context,
    project_id: projectId,
  })
  .strict()
  .meta({ id: "CreateAuthSession", example: { channel: "whatsapp", phone_number: "+37069199199", type: "login" } });

const SessionTestVerifyBody = z
  .object({
    phone_number: z.string().min(1).max(64).optional().describe("The number that answers; default +15555550100 (phone-first) or the session's number (auth)"),
  })
  .strict()
  .meta({ id: "SessionTestVerify" });

const sessionProof = z.object({ token: z.string(), expires_at: timestamp });

const PhoneSession = z
  .object({
    id: z.string().describe("sess_…"),
    channel: z.enum(SESSION_CHANNELS),
    status: z.enum(["pending", "verified", "expired"]),
    deep_link: z
      .string()
      .optional()
      .describe("While pending: opens the bot (t.me/<bot>?start=<token>, viber://pa?chatURI=<bot>&context=<token>) or the app with the message pre-filled"),
    qr_code: z.string().optional().describe("While pending: the URL of a PNG QR code of deep_link"),
    expires_at: timestamp,
    instructions: z.string(),
    phone_number: z.string().optional().describe("Once verified: the number the user answered from (E.164)"),
    verified_at: timestamp.optional(),
    verification_id: z.string().optional().describe("Once verified: the phone verification made for it"),
    proof: sessionProof.optional(),
    client_metadata: z.record(z.string(), z.unknown()).optional(),
    created_at: timestamp,
    test_mode: z.boolean(),
    project_id: projectIdShown,
    session_url: z
      .string()
      .describe("The session's hosted page for the user: deep link, QR code, instructions and live status ({PUBLIC_BASE_URL}/session/{id}#…)"),
  })
  .meta({ id: "PhoneSession" });

const AuthSession = z
  .object({
    id: z.string().describe("auth_…"),
    type: z.enum(AUTH_SESSION_TYPES),
    channel: z.enum(SESSION_CHANNELS),
    status: z.enum(["pending", "verified", "failed", "expired"]).describe("failed: a different phone answered"),
    deep_link: z.string().optional(),
    qr_code: z.string().optional().describe("While pending: a data:image/png;base64 URI of deep_link"),
    expires_at: timestamp,
    instructions: z.string(),
    phone_number: z.string().describe("The number that must answer (E.164)"),
    verified_at: timestamp.optional(),
    failed_at: timestamp.optional(),
    verification_id: z.string().optional(),
    proof: sessionProof.optional().describe("Once verified: a proof that lives 10 minutes"),
    client_metadata: z.record(z.string(), z.unknown()).optional(),
    created_at: timestamp,
    test_mode: z.boolean(),
    project_id: projectIdShown,
    session_url: z
      .string()
      .describe("The session's hosted page for the user: deep link, QR code, instructions and live status ({PUBLIC_BASE_URL}/session/{id}#…)"),
  })
  .meta({ id: "AuthSession" });

/** The session page sends session_url's signature in this header (never in a URL). */
export const SESSION_TOKEN_HEADER = "x-session-token";

const SessionQrQuery = z.object({ sig: z.string().min(1).max(64) }).strict();

const err = (description: string) => ({ description, schema: ErrorBody });

/** RPC session → REST (snake_case, ISO timestamps, absent members left out); auth sessions add type and failed_at. */
export function toRest(s: SessionMsg) {
  return {
    id: s.id,
    ...(s.kind === "auth" ? { type: s.type } : {}),
    channel: s.channel,
    status: s.status,
    ...(s.deepLink ? { deep_link: s.deepLink } : {}),
    ...(s.qrCode ? { qr_code: s.qrCode } : {}),
    expires_at: iso(s.expiresAt),
    instructions: s.instructions,
    ...(s.phoneNumber ? { phone_number: s.phoneNumber } : {}),
    ...(s.verifiedAt ? { verified_at: iso(s.verifiedAt) } : {}),
    ...(s.failedAt ? { failed_at: iso(s.failedAt) } : {}),
    ...(s.verificationId ? { verification_id: s.verificationId } : {}),
    ...(s.proof ? { proof: { token: s.proof.token, expires_at: iso(s.proof.expiresAt) } } : {}),
    ...(s.clientMetadata ? { client_metadata: s.clientMetadata } : {}),
    created_at: iso(s.createdAt),
    test_mode: s.testMode,
    ...(s.projectId ? { project_id: s.projectId } : {}),
    session_url: s.sessionUrl,
  };
}

/** What a session's hosted page shows: never the number, the proof or the tenant's metadata. */
const SessionPage = z
  .object({
    id: z.string(),
    kind: z.enum(["phone", "auth"]),
    type: z.enum(AUTH_SESSION_TYPES).nullable().describe("Auth sessions: 2fa, login or recovery"),
    channel: z.enum(SESSION_CHANNELS),
    status: z.enum(["pending", "verified", "failed", "expired"]).describe("failed: auth sessions only (a different phone answered)"),
    deep_link: z.string().nullable().describe("While pending (none to the test placeholder bot)"),
    qr_code: z.string().nullable().describe("While pending: a data: URI of a PNG of deep_link"),
    instructions: z.string(),
    expires_at: timestamp,
    test_mode: z.boolean(),
    business_name: z.string().nullable().describe("The project's business name, else the tenant's name"),
  })
  .meta({ id: "SessionPage" });

/** Phone-first sessions (/sessions) and auth sessions (/auth/sessions): one set of routes per kind; the sessions' hosted page's API. */
export function sessionRoutes(c: Clients, tenantName: (id: string) => Promise<string | undefined> = async () => undefined): RouteDef[] {
  const family = (kind: "phone" | "auth") => {
    const base = kind === "phone" ? "/api/v1/sessions" : "/api/v1/auth/sessions";
    const tag = kind === "phone" ? "Sessions" : "Auth sessions";
    const schema = kind === "phone" ? PhoneSession : AuthSession;
    const what = kind === "phone" ? "phone-first session" : "2FA / login / recovery session";
    return [
      route({
        method: "post",
        path: base,
        tag,
        summary: `Create a ${what}`,
        description:
          kind === "phone"
            ? "The user opens deep_link (or scans qr_code) and messages our bot; the number they write from is captured and verified. Lives 10 minutes."
            : "The user opens deep_link on the phone with phone_number and messages our bot; another number fails the session. Lives 5 minutes; the proof it yields 10 minutes.",
        auth: "key",
        body: kind === "phone" ? CreateSessionBody : CreateAuthSessionBody,
        responses: {
          201: { description: "Created", schema },
          400: err("validation_error, invalid_identifier or channel_unavailable"),
        },
        async handler({ req, body }) {
          const b = body as {
            channel: string;
            phone_number?: string;
            type?: string;
            client_metadata?: Record<string, unknown>;
            context?: Record<string, unknown>;
            project_id?: string;
          };
          const r = await c.session.createSession({
            scope: scopeOf(req),
            kind,
            channel: b.channel,
            phoneNumber: b.phone_number,
            type: b.type,
            clientMetadata: metadataOf(b) as never,
            projectId: b.project_id,
          });
          return { status: 201, body: toRest(r.session!) };
        },
      }),
      route({
        method: "get",
        path: `${base}/{id}`,
        tag,
        summary: `Poll a ${what}`,
        description:
          kind === "phone"
            ? "A phone-first session's state: pending (with its deep link and QR code) until the user answers, then verified with the number they answered from, the verification made for it and its proof; or expired."
            : "An auth session's state: pending until its number answers, verified (with a proof that lives 10 minutes), failed when another number answered, or expired.",
        auth: "key",
        params: idParams(kind === "phone" ? "session" : "authSession"),
        responses: { 200: { description: "The session", schema }, 404: err("not_found") },
        async handler({ req, params }) {
          const r = await c.session.getSession({ scope: scopeOf(req), kind, id: params.id });
          return { body: toRest(r.session!) };
        },
      }),
      route({
        method: "post",
        path: `${base}/{id}/test-verify`,
        tag,
        summary: `Complete a test ${what} at once (test keys only)`,
        description:
          kind === "phone"
            ? "As if phone_number (default +15555550100) had answered: the session is verified with a verification and its proof."
            : "As if phone_number (default the session's own) had answered: the same number verifies it, another fails it.",
        auth: "key",
        params: idParams(kind === "phone" ? "session" : "authSession"),
        body: SessionTestVerifyBody,
        responses: {
          200: { description: "The session after the answer", schema },
          400: err("invalid_identifier or challenge_expired"),
          403: err("test_mode_required: a live key"),
          404: err("not_found"),
          409: err("invalid_state: the session is no longer pending"),
        },
        async handler({ req, params, body }) {
          const r = await c.session.testVerifySession({ scope: scopeOf(req), kind, id: params.id, phoneNumber: body.phone_number });
          return { body: toRest(r.session!) };
        },
      }),
    ];
  };
  return [
    ...family("phone"),
    ...family("auth"),
    route({
      method: "get",
      path: "/api/v1/sessions/{id}/qr.png",
      tag: "Sessions",
      summary: "The QR code (PNG) of a pending phone-first session's deep link",
      description: "Public, so an <img> can show it; the URL (a session's qr_code) carries a signature, so the id alone does not reach it.",
      auth: "public",
      params: idParams("session"),
      query: SessionQrQuery,
      responses: { 200: { description: "PNG image", contentType: "image/png" }, 404: err("not_found") },
      async handler({ params, query, res }) {
        const r = await c.session.getSessionQrCode({ id: params.id, signature: query.sig });
        res.setHeader("cache-control", "private, max-age=600");
        res.type("png").send(Buffer.from(r.png));
        return {};
      },
    }),
    route({
      method: "get",
      path: "/api/v1/session-page/{id}",
      tag: "Sessions",
      summary: "What a session's hosted page shows (session_url), polled by that page",
      description: `Public: authorised by the signature in session_url's fragment, sent in the ${SESSION_TOKEN_HEADER} header.`,
      auth: "public",
      // any other id is not found, like a wrong signature
      params: z.object({ id: z.string().min(1).max(64) }),
      responses: { 200: { description: "The page state", schema: SessionPage }, 404: err("not_found") },
      async handler({ req, res, params }) {
        res.setHeader("Cache-Control", "no-store");
        res.setHeader("Referrer-Policy", "no-referrer");
        const signature = req.get(SESSION_TOKEN_HEADER) ?? "";
        if (!signature) throw new AppError("not_found", "session not found");
        const r = await c.session.getSessionPage({ id: params.id, signature });
        const s = r.session!;
        // no link, and so no QR code, to the placeholder bot of test mode (not ours)
        const link = s.deepLink && !isPlaceholderBotLink(s.deepLink) ? s.deepLink : null;
        return {
          body: {
            id: s.id,
            kind: s.kind as "phone" | "auth",
            type: s.type || null,
            channel: s.channel as (typeof SESSION_CHANNELS)[number],
            status: s.status,
            deep_link: link,
            qr_code: link ? await QRCode.toDataURL(link, { errorCorrectionLevel: "M", margin: 2, scale: 6 }) : null,
            instructions: s.instructions,
            expires_at: iso(s.expiresAt)!,
            test_mode: s.testMode,
            business_name: r.businessName || (await tenantName(r.tenantId)) || null,
          },
        };
      },
    }),
  ];
}
