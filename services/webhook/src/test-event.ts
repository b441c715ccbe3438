import { newId, TEST_WEBHOOK_EVENT, type Clock, type Scope, type SealingDatabase } from "@icv/platform";
import { AppError } from "@icv/platform";
import { baseHeaders } from "./deliverer.ts";
import { DeliveryStore } from "./store/deliveries.ts";
import { SettingsStore } from "./store/settings.ts";

/**
 * A `webhook.test` event to the scope's endpoint: one delivery row (one attempt), signed and sent
 * by the deliverer like any other, so the tenant sees it arrive and in the delivery log.
 */
export async function sendTestEvent(db: SealingDatabase, clock: Clock, scope: Scope): Promise<string> {
  const at = clock.now();
  const url = (await SettingsStore.endpointUrls(db, [scope])).get(`${scope.tenantId}:${scope.env}`);
  if (!url) throw new AppError("invalid_state", "no webhook endpoint is set for this environment");
  const eventId = newId("event", at.getTime());
  const payload = JSON.stringify({
    id: eventId,
    event: TEST_WEBHOOK_EVENT,
    test: scope.env === "test",
    created_at: at.toISOString(),
    message: "A test event sent from the ICV console",
  });
  const planned = {
    tenantId: scope.tenantId,
    environment: scope.env,
    eventId,
    eventType: TEST_WEBHOOK_EVENT,
    url,
    verificationRequestId: null,
    verificationId: null,
    payload,
  };
  const [id] = await DeliveryStore.insertDeliveries(db, [planned], 1, baseHeaders, at, db.personalData);
  return id;
}
