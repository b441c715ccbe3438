// A domain's web site on loopback for the HTTP file check: one http:// and one https:// listener
// (a self-signed certificate, as many sites have) on the same address and free ports, answering
// per host and path what the test set. Point the domain's A record at `site.address` (the test
// DNS server, ./dns-server.ts) and DOMAIN_HTTP_PORT / DOMAIN_HTTPS_PORT at its ports.
//
//   const site = await startDomainSite();
//   site.serve("example.test", "/.well-known/icv-verify.txt", { body: "icv-verify=abc" });
//   site.serve("example.test", "/.well-known/icv-verify.txt", { status: 302, location: "https://…" }, "http");
//   site.requests: [{ scheme, host, path }]
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { createCa } from "@icv/platform";

export interface SiteAnswer {
  status?: number;
  body?: string | Buffer;
  /** A redirect's target (status defaults to 302). */
  location?: string;
}

export interface DomainSite {
  address: string;
  httpPort: number;
  httpsPort: number;
  requests: { scheme: "http" | "https"; host: string; path: string }[];
  /** What `host` answers at `path`, on both schemes or on one. */
  serve(host: string, path: string, answer: SiteAnswer, scheme?: "http" | "https"): void;
  clear(): void;
  close(): Promise<void>;
}

/** `ports`: listen on these (e.g. a second site, on another 127/8 address, on the first one's ports); default free ones. */
export async function startDomainSite(opts: { address?: string; ports?: { http: number; https: number } } = {}): Promise<DomainSite> {
  const address = opts.address ?? "127.0.0.1";
  const answers = new Map<string, SiteAnswer>();
  const requests: DomainSite["requests"] = [];
  const handler = (scheme: "http" | "https") => (req: http.IncomingMessage, res: http.ServerResponse) => {
    const host = (req.headers.host ?? "").replace(/:\d+$/, "").toLowerCase();
    const path = (req.url ?? "/").split("?")[0];
    requests.push({ scheme, host, path });
    const a = answers.get(`${scheme} ${host} ${path}`) ?? answers.get(`* ${host} ${path}`);
    if (!a) return void res.writeHead(404, { "content-type": "text/plain" }).end("not found");
    if (a.location) return void res.writeHead(a.status ?? 302, { location: a.location }).end();
    res.writeHead(a.status ?? 200, { "content-type": "text/plain" }).end(a.body ?? "");
  };
  const ca = await createCa("domain site");
  const plain = http.createServer(handler("http"));
  const secure = https.createServer({ cert: ca.cert, key: ca.key }, handler("https"));
  await Promise.all(
    (
      [
        [plain, opts.ports?.http ?? 0],
        [secure, opts.ports?.https ?? 0],
      ] as const
    ).map(
      ([s, port]) =>
        new Promise<void>((resolve, reject) => {
          s.once("error", reject);
          s.listen(port, address, () => resolve());
        }),
    ),
  );
  return {
    address,
    httpPort: (plain.address() as AddressInfo).port,
    httpsPort: (secure.address() as AddressInfo).port,
    requests,
    serve(host, path, answer, scheme) {
      answers.set(`${scheme ?? "*"} ${host.toLowerCase()} ${path}`, answer);
    },
    clear() {
      answers.clear();
      requests.length = 0;
    },
    async close() {
      for (const s of [plain, secure]) s.closeAllConnections();
      await Promise.all([plain, secure].map((s) => new Promise<void>((r) => s.close(() => r()))));
    },
  };
}
