/** What a verification's move does to the requests that hold it: the Decide functions the request store applies, and the request events. */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { VerificationRequestChangedSchema } from "@icv/contracts/gen/icv/events/v1/verification_request_events_pb.ts";
import { outboxEvent, type OutboxEvent } from "@icv/platform";
import { MAX_ASSET_STARTS } from "./input.ts";
import type { AssetStatus, Decide, RequestChange, RequestStatus, RequestView, Status } from "../store/rows.ts";

const ts = (d: Date | null) => (d ? timestampFromDate(d) : undefined);

const OPEN: ReadonlySet<RequestStatus> = new Set(["pending", "partial"]);

/**
 * The asset status that a verification's status stands for. A revoked proof no longer counts; a
 * suspended one was verified (the request's outcome stands; the proof's status says the rest).
 */
export function assetStatusOf(v: Status): AssetStatus {
  if (v === "pending") return "in_progress";
  if (v === "revoked") return "failed";
  if (v === "suspended") return "verified";
  return v;
}

/** The proofs of a request's verified assets, as request events carry them. */
export function proofsOf(r: RequestView) {
  return r.assets
    .filter((a) => a.v_status === "verified" && a.proof_token)
    .map((a) => ({
      assetIndex: a.idx,
      type: a.type,
      verificationId: a.verification_id ?? undefined,
      proofToken: a.proof_token!,
      expiresAt: ts(a.proof_expires_at),
      sdJwtVc: a.proof_sd_jwt_vc ?? undefined,
      identifierSalt: a.proof_identifier_salt ?? undefined,
    }));
}

/** The request statuses that have an event. */
export type EventfulStatus = "partial" | "completed" | "expired";

/** A `verification_request.*` outbox event of the request in its new status. */
export function requestEvent(r: RequestView, status: EventfulStatus, at: Date): OutboxEvent {
  return outboxEvent(
    `verification_request.${status}`,
    { aggregateType: "verification_request", aggregateId: r.id, tenantId: r.tenant_id, environment: r.environment },
    create(VerificationRequestChangedSchema, {
      requestId: r.id,
      referenceId: r.reference_id ?? undefined,
      status,
      proofs: proofsOf(r),
      externalUserId: r.external_user_id || undefined,
      changedAt: timestampFromDate(at),
      callbackUrl: r.callback_url || undefined,
    }),
  );
}

const changedAssets = (r: RequestView, statuses: AssetStatus[]) =>
  r.assets.flatMap((a, i) => (a.status === statuses[i] ? [] : [{ idx: a.idx, status: statuses[i] }]));

/**
 * The state machine of DECISIONS.md, as a function of the assets' verifications: every required
 * asset verified → completed; some required asset verified → partial (its event only when
 * partial_ok). Open requests only; undefined when nothing changes.
 */
export function progress(at: Date): Decide {
  return (r) => {
    if (!OPEN.has(r.status)) return undefined;
    // an asset started more often than allowed has failed for good (its last verification expired with it)
    const statuses = r.assets.map((a) =>
      a.starts > MAX_ASSET_STARTS && a.v_status !== "verified" ? "failed" : a.v_status ? assetStatusOf(a.v_status) : a.status,
    );
    // an asset verified after the request's expiry does not count (the expiry came first)
    const counts = r.assets.map((a, i) => (statuses[i] === "verified" && a.v_verified_at && a.v_verified_at > r.expires_at ? "expired" : statuses[i]));
    const required = r.assets.map((a, i) => ({ a, s: counts[i] })).filter((x) => x.a.required);
    let status: RequestStatus = r.status;
    if (required.every((x) => x.s === "verified")) status = "completed";
    else if (required.some((x) => x.s === "verified")) status = "partial";
    const assets = changedAssets(r, statuses);
    if (status === r.status && !assets.length) return undefined;
    const after: RequestView = { ...r, status };
    const events = status === r.status ? [] : status === "completed" || (status === "partial" && r.partial_ok) ? [requestEvent(after, status, at)] : [];
    return { status, assets, events };
  };
}

/** Open → expired (event verification_request.expired) or cancelled (no event); unfinished assets expire with their verifications. */
function close(to: "expired" | "cancelled", at: Date): Decide {
  return (r) => {
    if (!OPEN.has(r.status)) return undefined;
    const statuses = r.assets.map(
      (a): AssetStatus => (a.v_status === "verified" ? "verified" : a.status === "failed" || a.v_status === "failed" ? "failed" : "expired"),
    );
    const change: RequestChange = { status: to, assets: changedAssets(r, statuses), events: [], expireVerifications: true };
    if (to === "expired") change.events.push(requestEvent({ ...r, status: to }, to, at));
    return change;
  };
}
export const expiry = (at: Date) => close("expired", at);
export const cancellation = (at: Date) => close("cancelled", at);
