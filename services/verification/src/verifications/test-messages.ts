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
