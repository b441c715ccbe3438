/** Creating a verification request: its assets, callbacks, project and expiry checked, stored with its event. */
import { AppError, newId, type Scope } from "@icv/platform";
import { channelFor } from "../channels/registry.ts";
import type { RequestRow, RequestView } from "../store/rows.ts";
import { MAX_PROOF_AGE_S, MIN_PROOF_AGE_S } from "./reuse.ts";
import { createVerification } from "../verifications/create.ts";
import { checkCallbackUrl } from "../callback-url.ts";
import {
  DEFAULT_REQUEST_TTL_S,
  MIN_REQUEST_TTL_S,
  MAX_REQUEST_TTL_S,
  MAX_ASSETS,
  ACTION_TYPES,
  MAX_METADATA_BYTES,
  type CreateRequestInput,
  type RequestDeps,
  invalid,
  checkRedirectUrl,
  text,
  assetRow,
} from "./input.ts";
import { progress } from "./decide.ts";
import { messageTypeOf } from "./input.ts";
import { resolveProjectId } from "../projects/projects.ts";

export async function createRequest(deps: RequestDeps, scope: Scope, input: CreateRequestInput): Promise<RequestView> {
  const { clock, store, verifications } = deps;
  if (!input.assets.length) throw invalid("assets must hold at least one asset", "assets");
  if (input.assets.length > MAX_ASSETS) throw invalid(`assets must hold at most ${MAX_ASSETS} assets`, "assets");
  const assets = input.assets.map(assetRow);
  if (!assets.some((a) => a.required)) throw invalid("at least one asset must be required", "assets");
  const ttl = input.expiresIn ?? DEFAULT_REQUEST_TTL_S;
  if (!Number.isInteger(ttl) || ttl < MIN_REQUEST_TTL_S || ttl > MAX_REQUEST_TTL_S) {
    throw invalid(`expires_in must be an integer from ${MIN_REQUEST_TTL_S} to ${MAX_REQUEST_TTL_S} seconds`, "expires_in");
  }
  if (input.maxProofAge !== undefined && (!Number.isInteger(input.maxProofAge) || input.maxProofAge < MIN_PROOF_AGE_S || input.maxProofAge > MAX_PROOF_AGE_S)) {
    throw invalid(`max_proof_age must be an integer from ${MIN_PROOF_AGE_S} to ${MAX_PROOF_AGE_S} seconds`, "max_proof_age");
  }
  const actionType = input.actionType ?? "verification";
  if (!(ACTION_TYPES as readonly string[]).includes(actionType)) throw invalid(`action_type must be one of ${ACTION_TYPES.join(", ")}`, "action_type");
  if (input.clientMetadata && Buffer.byteLength(JSON.stringify(input.clientMetadata)) > MAX_METADATA_BYTES) {
    throw invalid("client_metadata must be at most 4 KB of JSON", "client_metadata");
  }
  const projectId = deps.projects ? await resolveProjectId(deps.projects, scope, input.projectId) : null;
  // the project's success_url is the default redirect_url
  const project = deps.projects ? await deps.projects.effective(scope, projectId) : undefined;
  const redirectUrl = input.redirectUrl ?? project?.success_url ?? undefined;
  const base = {
    reference_id: text(input.referenceId, "reference_id", 255),
    action_title: text(input.actionContext?.title, "action_context.title", 200),
    action_description: text(input.actionContext?.description, "action_context.description", 1000),
    external_user_id: text(input.externalUserId, "external_user_id", 255),
    redirect_url: redirectUrl === undefined ? null : checkRedirectUrl(redirectUrl),
    callback_url: input.callbackUrl === undefined ? null : await checkCallbackUrl(input.callbackUrl, deps.allowPrivateTargets, deps.resolver),
  };

  // every check before the first verification is made, so a refused request leaves none behind
  for (const a of assets) {
    const missing = scope.env === "live" && a.identifier !== null && a.channel !== null ? channelFor(a.type, a.channel).missingProvider(deps.config) : [];
    if (missing.length)
      throw new AppError("channel_unavailable", `assets[${a.idx}]: channel ${a.channel} is not configured on this service (missing ${missing.join(", ")})`);
  }

  // Assets with identifier and channel get their verification now (an API-only integration
  // drives them); a failure here fails the request before it exists (the verifications already
  // made stay pending and expire on their own).
  const verificationIds: (string | null)[] = [];
  for (const a of assets) {
    if (a.identifier === null || a.channel === null) {
      verificationIds.push(null);
      continue;
    }
    try {
      const v = await createVerification(verifications, scope, {
        type: a.type,
        channel: a.channel,
        identifier: a.identifier,
        externalUserId: base.external_user_id ?? undefined,
        clientMetadata: input.clientMetadata,
        projectId: projectId ?? undefined,
        messageType: messageTypeOf(actionType),
        proofFormat: a.proof_format,
        holderKey: a.holder_key ?? undefined,
      });
      verificationIds.push(v.row.id);
    } catch (e) {
      if (e instanceof AppError) throw new AppError(e.code, `assets[${a.idx}]: ${e.message}`, { details: e.details, extra: e.extra });
      throw e;
    }
  }

  const now = clock.now();
  const id = newId("verificationRequest", now.getTime());
  const row: RequestRow = {
    id,
    tenant_id: scope.tenantId,
    environment: scope.env,
    status: "pending",
    ...base,
    action_type: actionType,
    partial_ok: input.partialOk ?? false,
    client_metadata: input.clientMetadata ?? null,
    created_at: now,
    updated_at: now,
    expires_at: new Date(now.getTime() + ttl * 1000),
    completed_at: null,
    cancelled_at: null,
    max_proof_age: input.maxProofAge ?? null,
    project_id: projectId,
  };
  await store.insert(
    row,
    assets.map((a, i) => ({
      ...a,
      request_id: id,
      status: verificationIds[i] ? "in_progress" : "pending",
      verification_id: verificationIds[i],
    })),
  );
  // a verification that moved before the request row existed was not seen by the consumer
  const r = await store.applyInScope(scope, id, progress(now), now);
  deps.logger.info(
    { request_id: scope.requestId, tenant_id: scope.tenantId, verification_request_id: id, assets: assets.length, env: scope.env },
    "verification request created",
  );
  return r!.after ?? r!.before;
}
