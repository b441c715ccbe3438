import type { ServiceName } from "../config.ts";

/**
 * Every aggregate family (topic) and the service whose outbox publishes it. The postgres
 * transport reads a topic's events from that service's schema; the kafka transport names the
 * topic `<KAFKA_TOPIC_PREFIX><family>`. A new family is one line here.
 */
export const TOPIC_SOURCES: Record<string, ServiceName | "gateway"> = {
  verification: "verification",
  verification_request: "verification",
  proof: "proof",
  session: "session",
  auth_session: "session",
  tenant: "gateway",
  api_key: "gateway",
  webhook_secret: "webhook",
};

/** The source schemas holding the given topics (each once). */
export function sourcesOf(topics: string[]): (ServiceName | "gateway")[] {
  const out = new Set<ServiceName | "gateway">();
  for (const t of topics) {
    const s = TOPIC_SOURCES[t];
    if (!s) throw new Error(`unknown event topic "${t}" (add it to TOPIC_SOURCES)`);
    out.add(s);
  }
  return [...out];
}
