import type { Clock, EnvName, EventRecord, PersonalData, Queryable } from "@icv/platform";
import { baseHeaders } from "./deliverer.ts";
import { hasCallbackUrl, isWebhookEvent, plannedDeliveries } from "./payload.ts";
import { maxAttempts } from "./schedule.ts";
import { newWebhookSecret } from "./signing.ts";
import { DeliveryStore } from "./store/deliveries.ts";
import { SettingsStore } from "./store/settings.ts";
import { redactStoredPayloads } from "./redaction.ts";

export interface DeliveryConsumer {
  /** One event, in the consumer's transaction (the same as a batch of one). */
  handle(q: Queryable, event: EventRecord): Promise<void>;
  /** A batch of events, in the consumer's transaction: one endpoint read and one insert for all of them. */
  handleBatch(q: Queryable, events: EventRecord[]): Promise<void>;
  afterCommit(events: EventRecord[]): void;
  /** The events a delivery (or a stored payload's redaction) can come of: one endpoint read for the batch, outside its transaction. */
  relevant(events: EventRecord[]): Promise<EventRecord[]>;
}

const scopeKey = (e: EventRecord) => `${e.tenantId}:${e.environment}`;

/** Each (tenant, environment) of the events once, as SettingsStore.endpointUrls takes them. */
function scopesOf(events: EventRecord[]): Array<{ tenantId: string; env: EnvName }> {
  const scopes = new Map<string, { tenantId: string; env: EnvName }>();
  for (const e of events) scopes.set(scopeKey(e), { tenantId: e.tenantId, env: e.environment });
  return [...scopes.values()];
}

/**
 * The event consumer's callbacks: `handleBatch` turns the webhook events of a batch into their
 * delivery rows (inside the consumer's transaction, so an event makes its rows exactly once), and
 * `afterCommit` wakes the deliverer when the batch made any.
 */
export function deliveryConsumer(opts: {
  clock: Clock;
  retryDelaysMs: readonly number[];
  onCommitted: () => void;
  /** Opens the events' sealed client_metadata and seals the stored bodies. */
  pd: PersonalData;
  /** The webhook database, read outside the batch's transaction by `relevant`. */
  db: Queryable;
}): DeliveryConsumer {
  // (tenant, environment) pairs known to have a secret. Secrets are never deleted, so each pair
  // is ensured once; it counts as known only after the transaction that ensured it committed.
  const withSecret = new Set<string>();
  const ensuredBy = new Map<string, string>();
  // events whose deliveries were written, until their transaction committed
  const planned = new Set<string>();
  const handleBatch = async (q: Queryable, events: EventRecord[]) => {
    const hooks = events.filter((e) => isWebhookEvent(e.eventType));
    if (!hooks.length) return;
    await redactStoredPayloads(q, hooks, opts.pd);
    // every tenant environment's endpoint, read once for the batch (and in its transaction, so a
    // change of endpoint applies from the next event on)
    const urls = await SettingsStore.endpointUrls(q, scopesOf(hooks));
    const at = opts.clock.now();
    const rows = [];
    const ensured = new Set<string>();
    for (const e of hooks) {
      const key = scopeKey(e);
      const p = plannedDeliveries(e, urls.get(key), opts.pd);
      if (!p.length) continue;
      if (!withSecret.has(key) && !ensured.has(key)) {
        // a tenant made without secrets (the bootstrap tenant) gets one before its first delivery
        await SettingsStore.ensureSecret(q, e.tenantId, e.environment, newWebhookSecret(), at);
        ensured.add(key);
        if (ensuredBy.size > 10_000) ensuredBy.clear();
        ensuredBy.set(e.id, key);
      }
      planned.add(e.id);
      rows.push(...p);
    }
    await DeliveryStore.insertDeliveries(q, rows, maxAttempts(opts.retryDelaysMs), baseHeaders, at, opts.pd);
  };
  return {
    handle: (q, event) => handleBatch(q, [event]),
    handleBatch,
    // an event of a scope without an endpoint, naming no URL of its own, makes no delivery: it is
    // passed over without a transaction (a redaction still reaches the payloads stored before)
    async relevant(events) {
      const urls = await SettingsStore.endpointUrls(opts.db, scopesOf(events));
      return events.filter((e) => e.eventType === "verification.redacted" || urls.has(scopeKey(e)) || hasCallbackUrl(e));
    },
    afterCommit(committed: EventRecord[]) {
      let made = false;
      for (const e of committed) {
        made = planned.delete(e.id) || made;
        const key = ensuredBy.get(e.id);
        if (key === undefined) continue;
        ensuredBy.delete(e.id);
        if (withSecret.size < 100_000) withSecret.add(key);
      }
      if (planned.size > 100_000) planned.clear();
      if (made) opts.onCommitted();
    },
  };
}
