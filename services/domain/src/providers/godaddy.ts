/**
 * GoDaddy (Domains API v1, `Authorization: sso-key {key}:{secret}`): the domain found by
 * `GET /domains/{domain}`, the record added by `PATCH /domains/{domain}/records`; removal reads
 * the TXT set at the name and puts back the others (`PUT`), or deletes the name's TXT set when
 * ours was the only one (`DELETE /domains/{domain}/records/TXT/{name}`).
 */
import { callApi, excerpt, jsonOf, ProviderError, relativeName, zoneCandidates, type DnsHostDefinition } from "./provider.ts";

const TTL = 600; // GoDaddy's minimum

export const godaddy: DnsHostDefinition = {
  key: "godaddy",
  name: "GoDaddy",
  credentials: ["key", "secret"],
  client(baseUrl, credentials) {
    const headers = {
      authorization: `sso-key ${credentials.key}:${credentials.secret}`,
      "content-type": "application/json",
      accept: "application/json",
    };

    async function call<T>(method: string, path: string, body?: unknown, allow404 = false): Promise<T | undefined> {
      const res = await callApi("GoDaddy", `${baseUrl}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const err = jsonOf<{ code?: string; message?: string }>(res.text);
      const why = err?.message ? `${err.message}${err.code ? ` (${err.code})` : ""}` : excerpt(res.text);
      if (res.status === 401 || res.status === 403) throw new ProviderError("credentials", `GoDaddy refused the API key: HTTP ${res.status} ${why}`);
      if (res.status === 404 && allow404) return undefined;
      if (res.status >= 300) throw new ProviderError("api", `GoDaddy answered HTTP ${res.status}: ${why}`);
      return res.text ? jsonOf<T>(res.text) : ({} as T);
    }
    const recordsPath = (zone: string, name: string) => `/domains/${encodeURIComponent(zone)}/records/TXT/${encodeURIComponent(relativeName(name, zone))}`;

    return {
      async write(domain, name, value) {
        for (const zone of zoneCandidates(domain)) {
          if (!(await call("GET", `/domains/${encodeURIComponent(zone)}`, undefined, true))) continue;
          await call("PATCH", `/domains/${encodeURIComponent(zone)}/records`, [{ type: "TXT", name: relativeName(name, zone), data: value, ttl: TTL }]);
          return { zone, name, value };
        }
        throw new ProviderError("zone", `the GoDaddy account holds no domain for ${domain}`);
      },
      async remove(record) {
        const path = recordsPath(record.zone, record.name);
        const current = (await call<{ data: string; ttl?: number }[]>("GET", path, undefined, true)) ?? [];
        const others = current.filter((r) => r.data !== record.value);
        if (others.length === current.length) return; // already gone
        if (others.length)
          await call(
            "PUT",
            path,
            others.map((r) => ({ data: r.data, ttl: r.ttl ?? TTL })),
          );
        else await call("DELETE", path);
      },
    };
  },
};
