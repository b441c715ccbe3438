import type { EventRecord, Queryable } from "@icv/platform";
import { entryFields, LOGGED_EVENTS } from "./entries.ts";
import { LogStore } from "./store/log.ts";

export const LOG_CONSUMER_GROUP = "transparency-log";
export { LOGGED_EVENTS };

/**
 * The proof events' consumer: queues each issuance and revocation for the sequencer, in the
 * consumer's transaction (an event id is recorded with its pending row, so a redelivered event is
 * never queued twice, and one already logged is left out), then wakes the sequencer.
 */
export function logConsumer(onQueued: () => void) {
  let queued = false;
  const handleBatch = async (q: Queryable, events: EventRecord[]) => {
    const rows = [];
    for (const e of events) {
      const f = entryFields(e);
      if (f) rows.push({ eventId: e.id, ...f });
    }
    await LogStore.queue(q, rows);
    queued ||= rows.length > 0;
  };
  return {
    handle: (q: Queryable, e: EventRecord) => handleBatch(q, [e]),
    handleBatch,
    afterCommit() {
      if (!queued) return;
      queued = false;
      onQueued();
    },
  };
}
