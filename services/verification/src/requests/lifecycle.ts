/** A verification request through its life: its URL and token, reads, cancel, expiry, and its state following its verifications' events. */
import { AppError, type EventRecord, type Queryable, type Scope } from "@icv/platform";
import { createRequestToken, verificationUrl, verifyRequestToken } from "./token.ts";
import type { RequestListFilter, RequestRow, RequestView } from "../store/rows.ts";
import { redirectTarget } from "./hosted.ts";
import type { RequestDeps } from "./input.ts";
import { progress, expiry, cancellation } from "./decide.ts";

/** The hosted page's URL of a request (its token is derived from the id and expiry, never stored). */
export function requestUrl(deps: RequestDeps, r: Pick<RequestRow, "id" | "expires_at">): string {
  return verificationUrl(deps.publicBaseUrl, r.id, createRequestToken(deps.tokenKey, r.id, r.expires_at));
}

/**
 * The request a hosted-page token authorises (every request-scoped RPC starts here): a wrong
 * token, another request's token or an unknown id → not_found (no oracle); the genuine token of
 * an expired request → request_expired. Answers the request and its tenant scope.
 */
export async function requireToken(deps: RequestDeps, id: string, token: string): Promise<{ request: RequestView; scope: Scope }> {
  const now = deps.clock.now();
  const check = verifyRequestToken(deps.tokenKey, id, token, now);
  if (!check.valid && check.reason === "expired") throw new AppError("request_expired", "this verification request has expired");
  const r = check.valid ? await deps.store.getById(id) : undefined;
  if (!check.valid || !r || r.expires_at.getTime() !== check.expiresAt.getTime()) throw new AppError("not_found", "verification request not found");
  return { request: r, scope: { tenantId: r.tenant_id, env: r.environment } };
}

/** The request as it stands now; an open one past its expiry is expired first. */
export async function getRequest(deps: RequestDeps, scope: Scope, id: string): Promise<RequestView> {
  await expireDueRequests(deps, scope);
  const r = await deps.store.get(scope, id);
  if (!r) throw new AppError("not_found", "verification request not found");
  return r;
}

export async function requestByReference(deps: RequestDeps, scope: Scope, referenceId: string): Promise<RequestView> {
  await expireDueRequests(deps, scope);
  const r = await deps.store.newestByReference(scope, referenceId);
  if (!r) throw new AppError("not_found", "no verification request has this reference_id");
  return r;
}

export async function listRequests(deps: RequestDeps, scope: Scope, f: RequestListFilter) {
  await expireDueRequests(deps, scope);
  return deps.store.list(scope, f);
}

/** pending/partial → cancelled; its pending verifications expire. */
export async function cancelRequest(deps: RequestDeps, scope: Scope, id: string): Promise<RequestView> {
  await expireDueRequests(deps, scope);
  const now = deps.clock.now();
  const r = await deps.store.applyInScope(scope, id, cancellation(now), now);
  if (!r) throw new AppError("not_found", "verification request not found");
  if (!r.after) throw new AppError("invalid_state", `the request is ${r.before.status}; only pending or partial requests can be cancelled`);
  return r.after;
}

/** Expires open requests past their expires_at (all, or one scope's), with their events. */
export async function expireDueRequests(deps: RequestDeps, scope?: Scope): Promise<number> {
  const now = deps.clock.now();
  return deps.store.expireDue(now, expiry(now), 200, scope);
}

/**
 * The event consumer's handler: a verification's status move drives the requests it belongs
 * to, inside the consumer's transaction (so a crash never applies it twice or loses it).
 */
export async function onRequestEvent(deps: RequestDeps, q: Queryable, event: EventRecord): Promise<void> {
  await onRequestEvents(deps, q, [event]);
}

/**
 * The verification a status move is about: the event's aggregate (a status_changed event is its
 * verification's, verification_id is the aggregate id), read without decoding the payload, which
 * carries the proof.
 */
const movedVerification = (e: EventRecord): string | undefined =>
  e.eventType === "verification.status_changed" && e.aggregateType === "verification" ? e.aggregateId : undefined;

/**
 * A batch of events in one transaction: the requests of every verification whose status
 * changed, found with one statement, each brought up to date once (a request's progress is
 * read from its verifications' rows, so once per batch is the same as once per event).
 */
export async function onRequestEvents(deps: RequestDeps, q: Queryable, events: EventRecord[]): Promise<void> {
  const changed = new Set(events.flatMap((e) => movedVerification(e) ?? []));
  if (!changed.size) return;
  const now = deps.clock.now();
  for (const id of await deps.store.requestIdsOfMany(q, [...changed])) await deps.store.apply(q, id, progress(now), now);
}

/**
 * The events onRequestEvents can act on: status moves of verifications that drive a request's
 * asset (one read; the consumer passes the others over without a transaction).
 */
export async function requestEvents(deps: RequestDeps, events: EventRecord[]): Promise<EventRecord[]> {
  const moves = events.map((e) => ({ e, id: movedVerification(e) }));
  const inRequests = await deps.store.inRequests([...new Set(moves.flatMap((m) => (m.id ? [m.id] : [])))]);
  return moves.filter((m) => m.id !== undefined && inRequests.has(m.id)).map((m) => m.e);
}

/**
 * Where the end user goes after signing in for this verification: the request's redirect_url
 * once the request settled, else back to its hosted page; undefined when no request drives it.
 */
export async function requestReturnUrl(deps: RequestDeps, scope: Scope, verificationId: string): Promise<string | undefined> {
  const id = await deps.store.requestIdOfVerification(scope, verificationId);
  if (!id) return undefined;
  const now = deps.clock.now();
  const r = await deps.store.applyInScope(scope, id, progress(now), now);
  const request = r ? (r.after ?? r.before) : undefined;
  return request ? (redirectTarget(request) ?? requestUrl(deps, request)) : undefined;
}
