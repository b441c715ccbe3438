/**
 * DigitalOcean (API v2, a personal access token): the domain found by `GET /domains/{name}`, then
 * `POST /domains/{name}/records` and `DELETE /domains/{name}/records/{id}`.
 */
import { callApi, excerpt, jsonOf, ProviderError, relativeName, zoneCandidates, type DnsHostDefinition } from "./provider.ts";

export const digitalocean: DnsHostDefinition = {
  key: "digitalocean",
  name: "DigitalOcean",
  credentials: ["token"],
  client(baseUrl, credentials) {
    const headers = { authorization: `Bearer ${credentials.token}`, "content-type": "application/json", accept: "application/json" };

    async function call<T>(method: string, path: string, body?: unknown, allow404 = false): Promise<T | undefined> {
      const res = await callApi("DigitalOcean", `${baseUrl}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const why = jsonOf<{ id?: string; message?: string }>(res.text)?.message ?? excerpt(res.text);
      if (res.status === 401 || res.status === 403) throw new ProviderError("credentials", `DigitalOcean refused the token: HTTP ${res.status} ${why}`);
      if (res.status === 404 && allow404) return undefined;
      if (res.status >= 300) throw new ProviderError("api", `DigitalOcean answered HTTP ${res.status}: ${why}`);
      return res.status === 204 ? undefined : jsonOf<T>(res.text);
    }

    return {
      async write(domain, name, value) {
        for (const zone of zoneCandidates(domain)) {
          if (!(await call("GET", `/domains/${encodeURIComponent(zone)}`, undefined, true))) continue;
          const r = await call<{ domain_record: { id: number } }>("POST", `/domains/${encodeURIComponent(zone)}/records`, {
            type: "TXT",
            name: relativeName(name, zone),
            data: value,
            ttl: 30,
          });
          if (!r?.domain_record?.id) throw new ProviderError("api", "DigitalOcean did not return the record's id");
          return { zone, name, value, id: String(r.domain_record.id) };
        }
        throw new ProviderError("zone", `the DigitalOcean account holds no domain for ${domain}`);
      },
      async remove(record) {
        await call("DELETE", `/domains/${encodeURIComponent(record.zone)}/records/${encodeURIComponent(record.id ?? "")}`);
      },
    };
  },
};
