/** The rows of the verification schema (one type per table or read shape). */
import type { HolderKey, OutboxEvent, ProofMethod } from "@icv/platform";

export type Status = "pending" | "verified" | "suspended" | "failed" | "expired" | "revoked";

export interface VerificationRow {
  id: string;
  tenant_id: string;
  environment: "live" | "test";
  type: string;
  channel: string;
  identifier: string;
  identifier_canonical: string;
  status: Status;
  code_hmac: string | null;
  challenge_expires_at: Date;
  instruction: string;
  deep_link: string | null;
  challenge_message: string | null;
  attempts: number;
  max_attempts: number;
  client_metadata: Record<string, unknown> | null;
  external_user_id: string | null;
  proof_expires_in: number;
  proof_token: string | null;
  proof_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
  verified_at: Date | null;
  revoked_at: Date | null;
  revoked_reason: string | null;
  /** How many times the code was resent (email channels; at most MAX_RESENDS). */
  resend_count: number;
  /** When the current code was sent by a resend; null while it is the one sent at creation. */
  code_sent_at: Date | null;
  /** How control was shown (the proof's `method` claim); null until completed (and on rows completed before it was recorded). */
  method: ProofMethod | null;
  /** The verification whose proof was reused (method reused_proof). */
  reused_from: string | null;
  /** Live phone verifications: HMAC of (channel, code), to find the verification an inbound message's code belongs to. */
  code_lookup: string | null;
  /** The session that proved this verification (RecordSessionVerification); one verification per session. */
  origin: string | null;
  /** Phone: "inbound" (reverse OTP, only a provider message completes it) or "outbound" (a code we sent; submit checks it). Null else. */
  delivery: "inbound" | "outbound" | null;
  /** This verification's own webhook URL (checked at create), or null. */
  callback_url: string | null;
  /** The project whose branding and templates its messages use (null: the default project). */
  project_id?: string | null;
  /** The template type of its code messages (null: verification_request). */
  message_type?: string | null;
  /** jwt (the RS256 JWT) or sd-jwt-vc (the JWT and an SD-JWT VC). */
  proof_format: ProofFormat;
  /** The holder's public JWK the proof is bound to (cnf), or null. */
  holder_key: HolderKey | null;
  /** The proof's identifier_salt (hex; null on proofs issued before hashes were salted, and until verified). */
  proof_identifier_salt: string | null;
  /** The SD-JWT VC issued beside the JWT (proof_format sd-jwt-vc). */
  proof_sd_jwt_vc: string | null;
  /** While suspended: since when and why. */
  suspended_at: Date | null;
  suspended_reason: string | null;
  /** When its personal data was erased (store/redaction.ts); its identifier is then empty. Absent on rows made in memory. */
  redacted_at?: Date | null;
  /** A redaction revoked its proof (revoke_proofs). */
  redacted_revoked?: boolean;
}

export type ProofFormat = "jwt" | "sd-jwt-vc";
export const PROOF_FORMATS: readonly ProofFormat[] = ["jwt", "sd-jwt-vc"];

export type NewVerification = Omit<
  VerificationRow,
  | "status"
  | "attempts"
  | "updated_at"
  | "proof_token"
  | "proof_expires_at"
  | "verified_at"
  | "revoked_at"
  | "revoked_reason"
  | "resend_count"
  | "code_sent_at"
  | "method"
  | "reused_from"
  | "callback_url"
  | "proof_format"
  | "holder_key"
  | "proof_identifier_salt"
  | "proof_sd_jwt_vc"
  | "suspended_at"
  | "suspended_reason"
> & {
  callback_url?: string | null;
  proof_format?: ProofFormat;
  holder_key?: HolderKey | null;
};

export interface ListFilter {
  status?: string;
  type?: string;
  channel?: string;
  externalUserId?: string;
  createdAfter?: Date;
  createdBefore?: Date;
  limit: number;
  offset: number;
}

/** One outbox event of a verification, as the SSE replay reads it. */
export interface EventRow {
  id: string;
  event_type: string;
  payload: Record<string, unknown>;
  created_at: Date;
}

/** A message a test-mode verification would have sent or expects (verification.test_messages). */
export interface TestMessageRow {
  id: string;
  tenant_id: string;
  environment: "test";
  verification_id: string | null;
  /** Set for a test session's message. */
  session_id: string | null;
  channel: string;
  direction: "outbound" | "inbound";
  from_address: string | null;
  to_address: string;
  subject: string | null;
  body: string;
  created_at: Date;
}

// ---- verification requests -------------------------------------------------------------------

export type RequestStatus = "pending" | "partial" | "completed" | "expired" | "cancelled";
export type AssetStatus = "pending" | "in_progress" | "verified" | "failed" | "expired";

export interface RequestRow {
  id: string;
  tenant_id: string;
  environment: "live" | "test";
  status: RequestStatus;
  reference_id: string | null;
  action_type: string;
  action_title: string | null;
  action_description: string | null;
  redirect_url: string | null;
  callback_url: string | null;
  partial_ok: boolean;
  external_user_id: string | null;
  client_metadata: Record<string, unknown> | null;
  created_at: Date;
  updated_at: Date;
  expires_at: Date;
  completed_at: Date | null;
  cancelled_at: Date | null;
  /** Seconds: proofs reused for this request must have been verified at most this long before it was created. */
  max_proof_age: number | null;
  /** The project whose branding, templates and callbacks the request uses (null: the default project). */
  project_id?: string | null;
}

export interface RequestAssetRow {
  request_id: string;
  idx: number;
  type: string;
  identifier: string | null;
  channel: string | null;
  allowed_channels: string[] | null;
  required: boolean;
  status: AssetStatus;
  verification_id: string | null;
  /** The proof format and holder key its verification is created with. */
  proof_format?: ProofFormat;
  holder_key?: HolderKey | null;
}

/** An asset with its verification's current status and proof (when it has one). */
export interface RequestAssetView extends RequestAssetRow {
  /** Times the asset was started (its verification made); past the most allowed the asset has failed. */
  starts: number;
  v_status: Status | null;
  v_verified_at: Date | null;
  proof_token: string | null;
  proof_expires_at: Date | null;
  proof_identifier_salt: string | null;
  proof_sd_jwt_vc: string | null;
}

export type RequestView = RequestRow & { assets: RequestAssetView[] };

/** What the domain decided for one request; the store writes it in the caller's transaction. */
export interface RequestChange {
  status: RequestStatus;
  assets: { idx: number; status: AssetStatus }[];
  events: OutboxEvent[];
  /** Expire the request's pending verifications (cancel, expiry). */
  expireVerifications?: boolean;
}

export type Decide = (r: RequestView) => RequestChange | undefined;

export interface RequestListFilter {
  status?: string;
  referenceId?: string;
  limit: number;
  offset: number;
}

/** A verification whose proof may be reused (RequestStore.reuseCandidates). */
export interface ReuseCandidateRow {
  id: string;
  type: string;
  channel: string;
  identifier: string;
  identifier_canonical: string;
  verified_at: Date;
  proof_expires_at: Date;
}
