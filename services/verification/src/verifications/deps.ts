/** What the verification use cases share: limits, inputs and answers, dependencies, the host they run on. */
import { createHash } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import type { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import type { DomainService } from "@icv/contracts/gen/icv/domain/v1/domain_service_pb.ts";
import {
  AppError,
  checkHolderKey,
  toEnvironment,
  type HolderKey,
  type Clock,
  type Config,
  type Logger,
  type ProofMethod,
  type Scope,
  type TwilioClient,
  type WhatsAppClient,
} from "@icv/platform";
import type { SubmitBody } from "../channels/channel.ts";
import type { DeliveryDeps } from "../delivery.ts";
import type { Mailer } from "../mailer.ts";
import type { SendLimits } from "../send-limits.ts";
import { PROOF_FORMATS, type DomainCheckRow, type ProjectStore, type ProofFormat, type VerificationRow, type VerificationStore } from "../store/index.ts";

export const MAX_ATTEMPTS = 5;
/** Email code resends (DECISIONS.md): at most MAX_RESENDS in all, at least RESEND_GAP_MS after the last send. */
export const MAX_RESENDS = 5;
export const RESEND_GAP_MS = 60_000;
export const DEFAULT_PROOF_TTL_S = 2_592_000;
export const MAX_METADATA_BYTES = 4096;

export interface CreateInput {
  type: string;
  channel: string;
  identifier: string;
  clientMetadata?: Record<string, unknown>;
  externalUserId?: string;
  proofExpiresIn?: number;
  /** Phone only: "inbound" (default) or "outbound" (sms, whatsapp). */
  delivery?: string;
  /** Domain by email: the mailbox at the domain (admin by default). */
  emailPrefix?: string;
  /** Domain on auto: the DNS host's API access, for the create's call chain only (never stored or logged). */
  dnsProvider?: { name: string; credentials: Record<string, string> };
  /** Domains created by POST /verifications/domain: the DNS host their NS records name. */
  provider?: { detected: string; name: string };
  /** Ethereum wallets: the chain id of the message to sign (default 1). */
  chainId?: number;
  /** This verification's own webhook URL. */
  callbackUrl?: string;
  /** The project whose branding and templates its messages use (checked: another scope's is validation_error). */
  projectId?: string;
  /** Set by verification requests: login_request or 2fa_request for a request of that action_type. */
  messageType?: string;
  /** jwt (default) or sd-jwt-vc. */
  proofFormat?: string;
  /** The holder's public JWK: the proof is bound to it. */
  holderKey?: unknown;
}

/** The proof options of a create (or of a request's asset, `field` its prefix): validation_error for an unknown format or a bad key. */
export function proofOptions(input: { proofFormat?: string; holderKey?: unknown }, field = ""): { proof_format: ProofFormat; holder_key: HolderKey | null } {
  const format = input.proofFormat ?? "jwt";
  if (!(PROOF_FORMATS as readonly string[]).includes(format)) {
    throw new AppError("validation_error", `${field}proof_format must be one of ${PROOF_FORMATS.join(", ")}`, {
      details: [{ field: `${field}proof_format`, message: "unknown format", code: "invalid_enum_value" }],
    });
  }
  try {
    return { proof_format: format as ProofFormat, holder_key: input.holderKey === undefined ? null : checkHolderKey(input.holderKey) };
  } catch (e) {
    if (e instanceof AppError && field)
      throw new AppError(e.code, `${field}${e.message}`, { details: e.details?.map((d) => ({ ...d, field: `${field}${d.field}` })) });
    throw e;
  }
}

export type SubmitInput = SubmitBody;

/** A verification as the service answers it; `code` only on creation and only where the user sends it. */
export interface Answer {
  row: VerificationRow;
  code?: string;
  /** Domain verifications: the check state (channel auto: with the check the create ran). */
  domain?: DomainCheckRow;
}

export interface VerificationDeps {
  store: VerificationStore;
  proofs: Client<typeof ProofService>;
  config: Config;
  clock: Clock;
  hmacKey: string;
  logger: Logger;
  /** Absent when SMTP is not configured (then live email channels are unavailable). */
  mailer?: Mailer;
  /** Asked before every code the service sends (test scopes count too, in their own windows). */
  sendLimits: SendLimits;
  /** The domain service (DNS/HTTP checks, provider writes, provider detection); absent: live domain checks are unavailable. */
  domains?: Client<typeof DomainService>;
  /** The phone senders of the configured providers (messagingSenders in @icv/platform), for outbound codes. */
  senders?: { whatsapp?: WhatsAppClient; sms?: TwilioClient };
  /** Projects and templates: the words and branding of the messages (absent: the built-in texts). */
  projects?: ProjectStore;
}

/** What an inbound code did (CompleteInboundCode). */
export interface InboundOutcome {
  outcome: "verified" | "already_verified" | "wrong_sender" | "failed" | "expired" | "not_pending" | "unknown_code";
  verificationId?: string;
  attemptsRemaining?: number;
  /** The reply from the verification's project template (verified, expired), when it has an active one. */
  reply?: string;
  /** Without such a reply: the business name of the verification's project, when it has one (for the built-in reply). */
  businessName?: string;
}

/** The error of a wrong answer: its code and what to tell the user. */
export type Failure = ["invalid_code" | "invalid_signature", string];

export const rpcScope = (s: Scope) => ({ tenantId: s.tenantId, environment: toEnvironment(s.env), requestId: s.requestId ?? "" });

/** The proof's identifier_hash of an identifier: hex SHA-256 of the proof's salt bytes and its UTF-8 (no salt: a proof from before salting). */
export const identifierHash = (salt: string, canonical: string) =>
  createHash("sha256").update(Buffer.from(salt, "hex")).update(canonical, "utf8").digest("hex");

/** What a use-case file needs of Verifications (index.ts): its dependencies and the steps every use case shares. */
export interface UseCaseHost {
  readonly d: VerificationDeps;
  readonly delivery: DeliveryDeps;
  get(scope: Scope, id: string): Promise<VerificationRow>;
  create(scope: Scope, input: CreateInput): Promise<Answer>;
  pendingForAction(scope: Scope, id: string, loaded?: VerificationRow): Promise<VerificationRow>;
  complete(scope: Scope, v: VerificationRow, method: ProofMethod, subjectHash?: string): Promise<VerificationRow>;
}
