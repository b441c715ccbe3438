/** Create: a new verification with its challenge; a code the service sends goes out before the row is stored. */
import { AppError, newId, TEMPLATE_TYPES, type Scope } from "@icv/platform";
import { codeHmac, codeLookup } from "../sending/challenge.ts";
import { ASSET_TYPES, CHANNELS_BY_TYPE, type AssetType } from "@icv/platform";
import { channelFor } from "../channels/registry.ts";
import { maskEmail, maskPhone } from "../channels/shared/mask.ts";
import { parseWith } from "../channels/shared/parse.ts";
import { deliverCode } from "../sending/delivery.ts";
import { checkCallbackUrl } from "../callback-url.ts";
import { composeCode } from "../sending/messages.ts";
import { resolveProjectId } from "../projects/projects.ts";
import { DEFAULT_PROOF_TTL_S, MAX_ATTEMPTS, MAX_METADATA_BYTES, proofOptions, type Answer, type CreateInput, type UseCaseDeps } from "./deps.ts";
import { providerCheck } from "./domain-checks.ts";
import { inboundTestMessage } from "./test-messages.ts";

/** Create; channel auto runs its provider chain at once (domain-checks.ts). */
export async function createVerification(deps: UseCaseDeps, scope: Scope, input: CreateInput): Promise<Answer> {
  const a = await createPending(deps, scope, input);
  return input.dnsProvider ? providerCheck(deps, scope, a, input.dnsProvider) : a;
}

async function createPending(deps: UseCaseDeps, scope: Scope, input: CreateInput): Promise<Answer> {
  const { config, clock, hmacKey, store } = deps;
  if (!(ASSET_TYPES as string[]).includes(input.type)) {
    throw new AppError("validation_error", `type must be one of ${ASSET_TYPES.join(", ")}`, {
      details: [{ field: "type", message: "unknown type", code: "invalid_enum_value" }],
    });
  }
  const type = input.type as AssetType;
  if (!(CHANNELS_BY_TYPE[type] as readonly string[]).includes(input.channel)) {
    throw new AppError(
      "invalid_channel_for_type",
      `channel ${input.channel || "(empty)"} is not valid for type ${type}; use one of ${CHANNELS_BY_TYPE[type].join(", ")}`,
    );
  }
  const channel = channelFor(type, input.channel);
  const ident = channel.normalize(input.identifier);
  const options = parseWith(channel.options, {
    delivery: input.delivery,
    email_prefix: input.emailPrefix,
    dns_provider: input.dnsProvider,
    chain_id: input.chainId,
  });
  if (input.externalUserId !== undefined && (input.externalUserId.length < 1 || input.externalUserId.length > 255)) {
    throw new AppError("validation_error", "external_user_id must be 1 to 255 characters");
  }
  if (input.clientMetadata && Buffer.byteLength(JSON.stringify(input.clientMetadata)) > MAX_METADATA_BYTES) {
    throw new AppError("validation_error", "client_metadata must be at most 4 KB of JSON");
  }
  const proof = proofOptions(input);
  const proofTtl = input.proofExpiresIn ?? DEFAULT_PROOF_TTL_S;
  if (!Number.isInteger(proofTtl) || proofTtl < 60 || proofTtl > 31_536_000) {
    throw new AppError("validation_error", "proof_expires_in must be an integer from 60 to 31536000 seconds");
  }
  // the verification's own webhook URL, checked like a request's (SSRF: public addresses only)
  const callbackUrl = input.callbackUrl === undefined ? null : await checkCallbackUrl(input.callbackUrl, config.ALLOW_PRIVATE_TARGETS);
  if (input.messageType !== undefined && !(TEMPLATE_TYPES as readonly string[]).includes(input.messageType))
    throw new AppError("validation_error", "unknown message type");
  const projectId = deps.projects ? await resolveProjectId(deps.projects, scope, input.projectId) : null;
  if (scope.env === "live") {
    const missing = channel.missingProvider(config);
    if (missing.length) {
      throw new AppError("channel_unavailable", `channel ${input.channel} is not configured on this service (missing ${missing.join(", ")})`);
    }
  }
  const now = clock.now();
  const id = newId("verification", now.getTime());
  const ch = channel.challenge({ id, identifier: ident.value, env: scope.env, now, config, options });
  // what sending/ takes of the channel, read while here: the code's lifetime and the address masked
  // (a code the service sends), or the message a test verification expects from the user (reverse OTP)
  const sends = ch.sendTo && ch.code ? { ttlMs: channel.ttlMs, maskedTo: type === "phone" ? maskPhone(ch.sendTo) : maskEmail(ch.sendTo) } : undefined;
  const expected = scope.env === "test" && ch.code && !ch.sendTo ? channel.testMessage?.(ch.code, config) : undefined;
  const v = { id, type, channel: input.channel, identifier: ident.value, project_id: projectId, message_type: input.messageType ?? null };
  // a code the service sends goes out before the row is stored: a failed send leaves nothing half-made;
  // test keys send nothing and get the message that would have gone out, stored with the row
  // before anything is sent or stored: a refused create leaves nothing behind
  if (ch.sendTo && ch.code) await deps.sendLimits.reserve(scope, { channel: input.channel, identifier: ch.sendTo });
  let sent;
  if (sends) {
    const message = await composeCode(deps.projects, scope, v, ch, sends, { publicBaseUrl: config.publicBaseUrl });
    sent = await deliverCode(deps.delivery, scope, message, now);
  }
  const testMessage = scope.env === "test" ? (sent ?? (expected && inboundTestMessage(scope, v, expected, now))) : undefined;
  const domain = ch.domainState && {
    token: ch.domainState.token,
    email_prefix: ch.domainState.emailPrefix,
    provider_detected: input.provider?.detected ?? null,
    provider_name: input.provider?.name ?? null,
  };
  const row = await store.insert(
    {
      id,
      tenant_id: scope.tenantId,
      environment: scope.env,
      type,
      channel: input.channel,
      identifier: ident.value,
      identifier_canonical: ident.canonical,
      code_hmac: ch.code ? codeHmac(hmacKey, id, ch.code) : null,
      challenge_expires_at: ch.expiresAt,
      instruction: ch.instruction,
      deep_link: ch.deepLink ?? null,
      challenge_message: ch.message ?? null,
      max_attempts: MAX_ATTEMPTS,
      client_metadata: input.clientMetadata ?? null,
      external_user_id: input.externalUserId ?? null,
      proof_expires_in: proofTtl,
      created_at: now,
      // live reverse-OTP codes arrive in provider messages without the verification id: index them
      code_lookup: options.delivery === "inbound" && scope.env === "live" && ch.code ? codeLookup(hmacKey, input.channel, ch.code) : null,
      origin: null,
      delivery: options.delivery ?? null,
      callback_url: callbackUrl,
      project_id: projectId,
      message_type: input.messageType ?? null,
      ...proof,
    },
    testMessage,
    domain,
  );
  deps.logger.info(
    { request_id: scope.requestId, tenant_id: scope.tenantId, verification_id: id, type, channel: input.channel, env: scope.env },
    "verification created",
  );
  const state = domain
    ? {
        ...domain,
        verification_id: id,
        tenant_id: scope.tenantId,
        environment: scope.env,
        check_count: 0,
        last_checked_at: null,
        last_check: null,
        recheck_interval_s: null,
        next_recheck_at: null,
        unreachable_count: 0,
      }
    : undefined;
  return { row, code: ch.showCode ? ch.code : undefined, domain: state };
}
