import type { Clock, ConsumerOptions, EnvName, EventRecord, Queryable } from "@icv/platform";
import { baseHeaders } from "./deliverer.ts";
import { isWebhookEvent, plannedDeliveries } from "./payload.ts";
import { maxAttempts } from "./schedule.ts";
import { newWebhookSecret } from "./signing.ts";
import { WebhookStore } from "./store.ts";

/**
 * The event consumer's two callbacks: `handle` turns a webhook event into its delivery rows
 * (inside the consumer's transaction, so an event makes its rows exactly once), and
 * `afterCommit` wakes the deliverer.
 */
export function deliveryConsumer(opts: { clock: Clock; retryDelaysMs: readonly number[]; onCommitted: () => void }): Pick<ConsumerOptions, "handle" | "afterCommit"> {
  // (tenant, environment) pairs known to have a secret. Secrets are never deleted, so each pair
  // is ensured once; it counts as known only after the transaction that ensured it committed.
  const withSecret = new Set<string>();
  const ensuredBy = new Map<string, string>();
  // endpoint URLs read in one transaction (a batch of events), keyed by tenant and environment
  const endpoints = new WeakMap<Queryable, Map<string, string | undefined>>();
  const endpointUrl = async (q: Queryable, tenantId: string, env: EnvName) => {
    let seen = endpoints.get(q);
    if (!seen) endpoints.set(q, (seen = new Map()));
    const key = `${tenantId}:${env}`;
    if (!seen.has(key)) seen.set(key, await WebhookStore.endpointUrl(q, tenantId, env));
    return seen.get(key);
  };
  return {
    async handle(q: Queryable, event: EventRecord) {
      if (!isWebhookEvent(event.eventType)) return;
      const planned = plannedDeliveries(event, await endpointUrl(q, event.tenantId, event.environment));
      if (!planned.length) return;
      const at = opts.clock.now();
      const key = `${event.tenantId}:${event.environment}`;
      if (!withSecret.has(key)) {
        // a tenant made without secrets (the bootstrap tenant) gets one before its first delivery
        await WebhookStore.ensureSecret(q, event.tenantId, event.environment, newWebhookSecret(), at);
        if (ensuredBy.size > 10_000) ensuredBy.clear();
        ensuredBy.set(event.id, key);
      }
      await WebhookStore.insertDeliveries(q, planned, maxAttempts(opts.retryDelaysMs), baseHeaders, at);
    },
    afterCommit(committed: EventRecord[]) {
      for (const e of committed) {
        const key = ensuredBy.get(e.id);
        if (key === undefined) continue;
        ensuredBy.delete(e.id);
        if (withSecret.size < 100_000) withSecret.add(key);
      }
      opts.onCommitted();
    },
  };
}
