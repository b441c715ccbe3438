/** NOTIFY channel the outbox trigger signals on each insert (payload: the schema). */
export const OUTBOX_CHANNEL = "icv_outbox";

/** NOTIFY channel on which a relay announces that `<schema>` published rows (payload: the schema). */
export const EVENTS_CHANNEL = "icv_events";
