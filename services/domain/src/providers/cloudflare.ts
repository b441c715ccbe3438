/**
 * Cloudflare (API v4, an API token with Zone:DNS:Edit): the zone found by
 * `GET /zones?name=`, then `POST /zones/{id}/dns_records` and `DELETE /zones/{id}/dns_records/{record}`.
 */
import { callApi, excerpt, jsonOf, ProviderError, zoneCandidates, type DnsHostDefinition } from "./provider.ts";

interface Envelope<T> {
  success: boolean;
  errors?: { code: number; message: string }[];
  result?: T;
}

export const cloudflare: DnsHostDefinition = {
  key: "cloudflare",
  name: "Cloudflare",
  credentials: ["api_token"],
  client(baseUrl, credentials) {
    const headers = { authorization: `Bearer ${credentials.api_token}`, "content-type": "application/json", accept: "application/json" };

    async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
      const res = await callApi("Cloudflare", `${baseUrl}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const env = jsonOf<Envelope<T>>(res.text);
      const why = env?.errors?.map((e) => `${e.message} (${e.code})`).join("; ") || excerpt(res.text);
      if (res.status === 401 || res.status === 403) throw new ProviderError("credentials", `Cloudflare refused the API token: HTTP ${res.status} ${why}`);
      if (res.status >= 300 || !env?.success) throw new ProviderError("api", `Cloudflare answered HTTP ${res.status}: ${why}`);
      return env.result as T;
    }

    return {
      async write(domain, name, value) {
        for (const zone of zoneCandidates(domain)) {
          const zones = await call<{ id: string; name: string }[]>("GET", `/zones?name=${encodeURIComponent(zone)}`);
          const found = zones.find((z) => z.name.toLowerCase() === zone);
          if (!found) continue;
          const rec = await call<{ id: string }>("POST", `/zones/${encodeURIComponent(found.id)}/dns_records`, {
            type: "TXT",
            name,
            content: value,
            ttl: 60,
          });
          return { zone: found.id, name, value, id: rec.id };
        }
        throw new ProviderError("zone", `the Cloudflare account holds no zone for ${domain}`);
      },
      async remove(record) {
        await call("DELETE", `/zones/${encodeURIComponent(record.zone)}/dns_records/${encodeURIComponent(record.id ?? "")}`);
      },
    };
  },
};
