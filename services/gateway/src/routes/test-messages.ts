import type { TestMessage as TestMessageMsg } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import { iso } from "@icv/platform";
import { scopeOf, type Clients } from "../clients.ts";
import { route, type RouteDef } from "../registry.ts";
import { ErrorBody, TestMessageList, TestMessagesQuery, toPagination } from "../schemas.ts";

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
