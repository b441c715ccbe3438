// verification.redacted (docs/privacy.md): the stored bodies of that verification's deliveries keep
// no personal part. Their client_metadata and external_user_id become null and their proof loses its
// SD-JWT VC (its disclosures hold the identifier), in the consumer's transaction that plans the
// redacted event's own deliveries (so it happens once per event). Bodies are stored sealed: they
// are read opened, changed here and sealed again.
import type { EventRecord, PersonalData, Queryable } from "@icv/platform";
import { DeliveryStore } from "./store/deliveries.ts";
import { sealBody } from "./store/sealing.ts";

/** A body without its personal parts; undefined when it has none. */
function unpersonal(payload: string): string | undefined {
  const body = JSON.parse(payload) as Record<string, unknown>;
  const proof = body.proof as Record<string, unknown> | null | undefined;
  const personal = body.client_metadata != null || body.external_user_id != null || (proof != null && "sd_jwt_vc" in proof);
  if (!personal) return undefined;
  if ("client_metadata" in body) body.client_metadata = null;
  if ("external_user_id" in body) body.external_user_id = null;
  if (proof != null) delete proof.sd_jwt_vc;
  return JSON.stringify(body);
}

/** Nulls the personal parts of the stored payloads of the verifications these events redacted. */
export async function redactStoredPayloads(q: Queryable, events: EventRecord[], pd: PersonalData): Promise<void> {
  const redacted = events.filter((e) => e.eventType === "verification.redacted");
  if (!redacted.length) return;
  const rows = await DeliveryStore.redactablePayloads(q, redacted);
  const changed = rows.flatMap((d) => {
    const body = unpersonal(d.payload);
    return body === undefined ? [] : [{ id: d.id, payload: sealBody(pd, d.id, body) }];
  });
  if (!changed.length) return;
  await DeliveryStore.replacePayloads(q, changed, pd.currentVersion);
}
