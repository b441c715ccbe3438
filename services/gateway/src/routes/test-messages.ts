import { z } from "zod";
import type { TestMessage as TestMessageMsg } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import { iso } from "@icv/platform";
import { scopeOf, type Clients } from "../clients.ts";
import { route, type RouteDef } from "../registry.ts";
import { assetChannel, ErrorBody, PageQuery, Pagination, toPagination } from "../schemas.ts";

const TestMessagesQuery = z
  .object({
    ...PageQuery,
    verification_id: z
      .string()
      .regex(/^ver_[0-9A-HJKMNP-TV-Z]{26}$/, "verification_id must be a verification id (ver_…)")
      .optional(),
  })
  .strict();

const TestMessage = z
  .object({
    id: z.string(),
    verification_id: z.string().optional().describe("The test verification the message belongs to"),
    session_id: z.string().optional().describe("Or the test session (sess_… or auth_…) it belongs to"),
    channel: assetChannel,
    direction: z.enum(["outbound", "inbound"]).describe("outbound: we would have sent it; inbound: we expect the user to send it"),
    from: z.string().optional().describe("inbound: the user's number"),
    to: z.string().describe("outbound: the email address; inbound: our number or @bot"),
    subject: z.string().optional(),
    text: z.string().describe("The message text; it contains the code (test mode only)"),
    created_at: z.string(),
  })
  .meta({ id: "TestMessage" });

const TestMessageList = z.object({ data: z.array(TestMessage), pagination: Pagination }).meta({ id: "TestMessageList" });

const err = (description: string) => ({ description, schema: ErrorBody });

const toItem = (m: TestMessageMsg) => ({
  id: m.id,
  ...(m.verificationId ? { verification_id: m.verificationId } : {}),
  ...(m.sessionId ? { session_id: m.sessionId } : {}),
  channel: m.channel,
  direction: m.direction as "outbound" | "inbound",
  ...(m.from !== undefined ? { from: m.from } : {}),
  to: m.to,
  ...(m.subject !== undefined ? { subject: m.subject } : {}),
  text: m.text,
  created_at: iso(m.createdAt)!,
});

export function testMessageRoutes(c: Clients): RouteDef[] {
  return [
    route({
      method: "get",
      path: "/api/v1/test/messages",
      tag: "Test mode",
      summary: "Messages test verifications would have sent or expect, newest first",
      description:
        "Test keys send nothing. This lists what would have happened: the code a test email verification or an outbound phone " +
        "verification (or a resend) would have sent (direction outbound, to the address or number, with the code), and the code " +
        "message a test inbound phone verification expects from the user (direction inbound, from the user's number to our number " +
        "or bot). Kept 7 days. Test keys only.",
      auth: "key",
      query: TestMessagesQuery,
      responses: {
        200: { description: "A page of test messages", schema: TestMessageList },
        400: err("validation_error"),
        403: err("test_mode_required: a live key"),
      },
      async handler({ req, query }) {
        const r = await c.verification.listTestMessages({
          scope: scopeOf(req),
          page: { page: query.page ?? 1, limit: query.limit ?? 20 },
          verificationId: query.verification_id,
        });
        return { body: { data: r.messages.map(toItem), pagination: toPagination(r.pageInfo!) } };
      },
    }),
  ];
}
