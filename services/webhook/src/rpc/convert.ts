/** Rows ⇄ RPC messages: the one place the webhook service converts them. */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { DeliverySchema, EnvironmentWebhooksSchema } from "@icv/contracts/gen/icv/webhook/v1/webhook_service_pb.ts";
import { toEnvironment, ts, type EnvName } from "@icv/platform";
import type { DeliveryRow, EndpointRow, SecretRow } from "../store/rows.ts";

/** A tenant environment's secret and endpoint → RPC message (the previous secret only while it still signs). */
export function environmentWebhooks(
  env: EnvName,
  secret: SecretRow | undefined,
  endpoint: EndpointRow | undefined,
  now: Date,
): MessageInitShape<typeof EnvironmentWebhooksSchema> {
  const overlap = secret?.previous_secret && secret.previous_expires_at && secret.previous_expires_at > now;
  return {
    environment: toEnvironment(env),
    url: endpoint?.url ?? "",
    urlUpdatedAt: ts(endpoint?.updated_at),
    secret: secret?.secret ?? "",
    secretCreatedAt: ts(secret?.created_at),
    previousSecret: overlap ? secret.previous_secret! : "",
    previousSecretExpiresAt: overlap ? ts(secret.previous_expires_at) : undefined,
    failingSince: ts(endpoint?.failing_since),
    disabledAt: ts(endpoint?.disabled_at),
    disabledReason: endpoint?.disabled_reason ?? "",
  };
}

/** Row → RPC message; the detail members only when `detail`. */
export function toMessage(row: DeliveryRow, detail: boolean): MessageInitShape<typeof DeliverySchema> {
  return {
    id: row.id,
    eventId: row.event_id,
    eventType: row.event_type,
    url: row.url,
    verificationRequestId: row.verification_request_id ?? undefined,
    verificationId: row.verification_id ?? undefined,
    status: row.status,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    responseStatus: row.response_status ?? undefined,
    createdAt: ts(row.created_at),
    updatedAt: ts(row.updated_at),
    errorMessage: row.error_message ?? undefined,
    lastAttemptAt: ts(row.last_attempt_at),
    nextRetryAt: ts(row.next_retry_at),
    ...(detail
      ? {
          requestPayload: row.payload,
          requestHeaders: row.request_headers,
          responseBody: row.response_body ?? undefined,
          attemptLog: row.attempt_log.map((a) => ({
            attempt: a.attempt,
            at: ts(new Date(a.at)),
            status: a.status,
            error: a.error,
            durationMs: a.duration_ms,
            event: a.event ?? "",
            reason: a.reason,
          })),
        }
      : {}),
  };
}
