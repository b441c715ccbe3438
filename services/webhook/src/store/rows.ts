/** The webhook service's rows and the deliverer's view of its queue (the shapes store/ reads and writes). */
import type { EnvName } from "@icv/platform";

export type DeliveryStatus = "pending" | "delivered" | "failed";

export interface AttemptLogEntry {
  attempt: number;
  at: string;
  status?: number;
  error?: string;
  duration_ms: number;
  /** The delivery log's other entries (not attempts): the delivery ended failed, or its endpoint was disabled. */
  event?: "attempt.exhausted" | "endpoint.disabled";
  reason?: string;
}

export interface DeliveryRow {
  id: string;
  tenant_id: string;
  environment: EnvName;
  event_id: string;
  event_type: string;
  url: string;
  verification_request_id: string | null;
  verification_id: string | null;
  payload: string;
  request_headers: Record<string, string>;
  status: DeliveryStatus;
  attempts: number;
  max_attempts: number;
  response_status: number | null;
  response_body: string | null;
  error_message: string | null;
  attempt_log: AttemptLogEntry[];
  next_retry_at: Date | null;
  last_attempt_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** A claimed row with what its sender needs: the body and the tenant's live secrets. */
export interface DeliveryJob {
  id: string;
  tenant_id: string;
  environment: EnvName;
  url: string;
  payload: string;
  attempts: number;
  max_attempts: number;
  lease_token: string;
  secret: string | null;
  previous_secret: string | null;
  previous_expires_at: Date | null;
  /** The traceparent of the event the delivery was made for (claimed while tracing is on; null when it had none). */
  traceparent?: string | null;
}

/** The outcome of one attempt, written back by the sender that held the lease. */
export interface AttemptResult {
  id: string;
  leaseToken: string;
  status: DeliveryStatus;
  responseStatus: number | null;
  responseBody: string | null;
  errorMessage: string | null;
  entry: AttemptLogEntry;
  /** Log entries written after the attempt's (attempt.exhausted when it ended the delivery failed). */
  notices?: AttemptLogEntry[];
  nextRetryAt: Date | null;
  headers: Record<string, string>;
  at: Date;
}

export interface SecretRow {
  environment: EnvName;
  secret: string;
  created_at: Date;
  previous_secret: string | null;
  previous_expires_at: Date | null;
}

export interface EndpointRow {
  environment: EnvName;
  url: string;
  updated_at: Date;
  failing_since: Date | null;
  disabled_at: Date | null;
  disabled_reason: string | null;
}

export interface DeliveryFilter {
  status?: string;
  eventType?: string;
  verificationRequestId?: string;
  verificationIds?: string[];
  limit: number;
  offset: number;
}

/** An endpoint that a batch of results disabled (for the deliverer's log). */
export interface DisabledEndpoint {
  tenant_id: string;
  environment: EnvName;
  failing_since: Date;
}

/** What the deliverer needs of the store (a bench or test may bring its own). */
export interface DeliveryQueue {
  claimDue(now: Date, leaseUntil: Date, leaseToken: string, limit: number): Promise<DeliveryJob[]>;
  /** Writes the results; answers the endpoints they disabled, if the queue tracks endpoint health. */
  recordResults(results: AttemptResult[]): Promise<DisabledEndpoint[] | void>;
}
