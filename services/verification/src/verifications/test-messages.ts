/** A test session's message, kept for GET /test/messages (test scopes only). */
import { AppError, newId, type Scope } from "@icv/platform";
import type { TestMessageRow } from "../store/rows.ts";
import type { UseCaseDeps } from "./deps.ts";

export interface SessionMessage {
  sessionId: string;
  channel: string;
  direction: "inbound" | "outbound";
  from?: string;
  to: string;
  text: string;
}

export async function recordTestMessage(deps: Pick<UseCaseDeps, "store" | "clock">, scope: Scope, m: SessionMessage): Promise<TestMessageRow> {
  if (scope.env !== "test") throw new AppError("test_mode_required", "test messages are only kept for test keys (pk_test_)");
  const now = deps.clock.now();
  const row: TestMessageRow = {
    id: newId("testMessage", now.getTime()),
    tenant_id: scope.tenantId,
    environment: "test",
    verification_id: null,
    session_id: m.sessionId,
    channel: m.channel,
    direction: m.direction,
    from_address: m.from ?? null,
    to_address: m.to,
    subject: null,
    body: m.text,
    created_at: now,
  };
  await deps.store.insertTestMessage(row);
  return row;
}

/**
 * Test mode, reverse OTP: the code message a test verification expects from the user (the
 * message the deep link pre-fills, inbound from the user's number to our number or bot: the
 * channel's expectedMessage). Codes the service sends are recorded by sending/delivery.ts.
 */
export function inboundTestMessage(
  scope: Scope,
  v: { id: string; channel: string; identifier: string },
  expected: { to: string; body: string },
  now: Date,
): TestMessageRow {
  return {
    id: newId("testMessage", now.getTime()),
    tenant_id: scope.tenantId,
    environment: "test",
    verification_id: v.id,
    session_id: null,
    channel: v.channel,
    direction: "inbound",
    from_address: v.identifier,
    to_address: expected.to,
    subject: null,
    body: expected.body,
    created_at: now,
  };
}
