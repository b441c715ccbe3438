import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addressRefusal, checkTargetUrl, createOutboundClient, OutboundError, parseTargetUrl, PRIVATE_HINT, type Resolver } from "../src/outbound.ts";

interface Seen {
  host?: string;
  method?: string;
  body: string;
}

let server: http.Server;
let port: number;
const seen: Seen[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      seen.push({ host: req.headers.host, method: req.method, body });
      if (req.url === "/big") return res.end("x".repeat(10_000));
      if (req.url === "/redirect") return res.writeHead(302, { location: "http://127.0.0.1/elsewhere" }).end();
      if (req.url === "/hang") return; // never answers
      res.writeHead(200, { "content-type": "text/plain" }).end("ok");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

/** A DNS stub: answers from the table and counts lookups. */
function stubResolver(table: Record<string, string[]>) {
  const calls: string[] = [];
  const resolver: Resolver = async (host) => {
    calls.push(host);
    const found = table[host];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
    return found.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };
  return { resolver, calls };
}

const refusedWith = async (p: Promise<unknown>): Promise<OutboundError> => {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(OutboundError);
  return e as OutboundError;
};

describe("addressRefusal", () => {
  it.each([
    ["127.0.0.1", "127.0.0.1 is a loopback address"],
    ["127.8.9.10", "127.8.9.10 is a loopback address"],
    ["10.1.2.3", "10.1.2.3 is a private address"],
    ["172.16.0.1", "172.16.0.1 is a private address"],
    ["192.168.1.1", "192.168.1.1 is a private address"],
    ["100.64.0.1", "100.64.0.1 is a carrier-grade NAT (CGNAT) address"],
    ["169.254.1.1", "169.254.1.1 is a link-local address"],
    ["169.254.169.254", "169.254.169.254 is a cloud metadata address"],
    ["0.0.0.0", "0.0.0.0 is an unspecified address"],
    ["224.0.0.1", "224.0.0.1 is a multicast address"],
    ["255.255.255.255", "255.255.255.255 is a broadcast address"],
    ["240.0.0.1", "240.0.0.1 is a reserved address"],
    ["::1", "::1 is a loopback address"],
    ["::", ":: is an unspecified address"],
    ["fe80::1", "fe80::1 is a link-local address"],
    ["fc00::1", "fc00::1 is a unique-local address"],
    ["fd12:3456::1", "fd12:3456::1 is a unique-local address"],
    ["fd00:ec2::254", "fd00:ec2::254 is a cloud metadata address"],
    ["ff02::1", "ff02::1 is a multicast address"],
    ["::ffff:127.0.0.1", "::ffff:127.0.0.1 is a loopback address"],
    ["::ffff:a00:1", "::ffff:a00:1 is a private address"],
    ["::ffff:169.254.169.254", "::ffff:169.254.169.254 is a cloud metadata address"],
    ["64:ff9b::7f00:1", "64:ff9b::7f00:1 is a NAT64 address"],
    ["2002:7f00:1::1", "2002:7f00:1::1 is a 6to4 address"],
    // IPv4-compatible IPv6 (::/96): what http://[::127.0.0.1]/ becomes once the URL is parsed
    ["::7f00:1", "::7f00:1 is an IPv4-compatible address"],
    ["::a00:1", "::a00:1 is an IPv4-compatible address"],
    ["::808:808", "::808:808 is an IPv4-compatible address"],
    ["::ffff:0:7f00:1", "::ffff:0:7f00:1 is an IPv4-translated address"],
    ["64:ff9b:1::a00:1", "64:ff9b:1::a00:1 is a NAT64 address"],
    ["64:ff9b::a9fe:a9fe", "64:ff9b::a9fe:a9fe is a NAT64 address"],
    ["2002:a9fe:a9fe::1", "2002:a9fe:a9fe::1 is a 6to4 address"],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001:0:4136:e378:8000:63bf:3fff:fdd2 is a Teredo address"],
    ["100::1", "100::1 is a reserved address"],
    ["0x7f.1", "0x7f.1 is a loopback address"],
  ])("refuses %s", (address, why) => {
    expect(addressRefusal(address)).toBe(why);
  });

  it.each(["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "2a00:1450:4001:80b::200e", "::ffff:8.8.8.8"])("allows public %s", (address) => {
    expect(addressRefusal(address)).toBeUndefined();
  });
});

describe("parseTargetUrl", () => {
  it("accepts http and https URLs", () => {
    expect(parseTargetUrl("https://hooks.example.com/icv?x=1").hostname).toBe("hooks.example.com");
    expect(parseTargetUrl("http://hooks.example.com:8080/").port).toBe("8080");
  });

  it.each([
    ["ftp://example.com/", "only http and https URLs are allowed, not ftp"],
    ["file:///etc/passwd", "only http and https URLs are allowed, not file"],
    ["javascript:alert(1)", "only http and https URLs are allowed, not javascript"],
    ["https://user:pass@example.com/", "URL must not contain credentials"],
    ["https://user@example.com/", "URL must not contain credentials"],
    ["/relative/path", "not an absolute URL"],
    [`https://example.com/${"a".repeat(2100)}`, "URL is longer than 2048 characters"],
  ])("refuses %s", (url, message) => {
    expect(() => parseTargetUrl(url)).toThrow(message);
  });
});

describe("outbound client", () => {
  it("refuses a loopback IP literal before connecting", async () => {
    const client = createOutboundClient({ allowPrivate: false });
    const before = seen.length;
    const e = await refusedWith(client.request(`http://127.0.0.1:${port}/`, { method: "POST", body: "{}" }));
    expect(e.kind).toBe("refused");
    expect(e.message).toBe("refused: 127.0.0.1 is a loopback address");
    expect(seen.length).toBe(before);
    client.close();
  });

  it("refuses an IPv4-mapped IPv6 literal", async () => {
    const client = createOutboundClient({ allowPrivate: false });
    const e = await refusedWith(client.request(`http://[::ffff:127.0.0.1]:${port}/`));
    expect(e.message).toMatch(/^refused: ::ffff:7f00:1 is a loopback address$/);
    client.close();
  });

  it("refuses an IPv4-compatible IPv6 literal ([::127.0.0.1])", async () => {
    const client = createOutboundClient({ allowPrivate: false });
    const before = seen.length;
    const e = await refusedWith(client.request(`http://[::127.0.0.1]:${port}/`));
    expect(e.message).toBe("refused: ::7f00:1 is an IPv4-compatible address");
    expect(seen.length).toBe(before);
    client.close();
  });

  it("refuses a host name when any address it resolves to is private", async () => {
    const { resolver } = stubResolver({ "mixed.example": ["93.184.216.34", "10.0.0.7"], "meta.example": ["169.254.169.254"] });
    const client = createOutboundClient({ allowPrivate: false, resolver });
    const e1 = await refusedWith(client.request("http://mixed.example/"));
    expect(e1.message).toBe("refused: 10.0.0.7 is a private address (mixed.example resolves to it)");
    const e2 = await refusedWith(client.request("http://meta.example/latest/meta-data/"));
    expect(e2.message).toBe("refused: 169.254.169.254 is a cloud metadata address (meta.example resolves to it)");
    client.close();
  });

  it("connects to the address it resolved once (pinned), keeping the Host header", async () => {
    // the name exists only in the stub: the request can only succeed through the pinned address
    const { resolver, calls } = stubResolver({ "hooks.invalid": ["127.0.0.1"] });
    const client = createOutboundClient({ allowPrivate: true, resolver });
    const r = await client.request(`http://hooks.invalid:${port}/hook?a=1`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"a":1}',
    });
    expect(r.status).toBe(200);
    expect(r.body).toBe("ok");
    expect(r.address).toBe("127.0.0.1");
    expect(calls).toEqual(["hooks.invalid"]);
    expect(seen.at(-1)).toEqual({ host: `hooks.invalid:${port}`, method: "POST", body: '{"a":1}' });
    client.close();
  });

  it("reports DNS failures as network errors", async () => {
    const { resolver } = stubResolver({});
    const client = createOutboundClient({ allowPrivate: false, resolver });
    const e = await refusedWith(client.request("https://nowhere.invalid/"));
    expect(e.kind).toBe("network");
    expect(e.message).toBe("DNS lookup of nowhere.invalid failed: host not found (ENOTFOUND)");
    client.close();
  });

  it("does not follow redirects", async () => {
    const client = createOutboundClient({ allowPrivate: true });
    const before = seen.length;
    const r = await client.request(`http://127.0.0.1:${port}/redirect`);
    expect(r.status).toBe(302);
    expect(seen.length).toBe(before + 1);
    client.close();
  });

  it("keeps only the first 4 KB of the response body", async () => {
    const client = createOutboundClient({ allowPrivate: true });
    const r = await client.request(`http://127.0.0.1:${port}/big`);
    expect(r.status).toBe(200);
    expect(r.body).toBe("x".repeat(4096));
    client.close();
  });

  it("gives up after the timeout", async () => {
    const client = createOutboundClient({ allowPrivate: true, timeoutMs: 150 });
    const t0 = Date.now();
    const e = await refusedWith(client.request(`http://127.0.0.1:${port}/hang`));
    expect(e.kind).toBe("timeout");
    expect(e.message).toBe("timed out after 150 ms");
    expect(Date.now() - t0).toBeLessThan(2000);
    client.close();
  });

  it("counts a slow DNS answer against the timeout", async () => {
    const slow: Resolver = () => new Promise(() => undefined);
    const client = createOutboundClient({ allowPrivate: false, timeoutMs: 100, resolver: slow });
    const e = await refusedWith(client.request("https://slow.example/"));
    expect(e.kind).toBe("timeout");
    client.close();
  });

  it("reports a refused connection", async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const p = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const client = createOutboundClient({ allowPrivate: true });
    const e = await refusedWith(client.request(`http://127.0.0.1:${p}/`));
    expect(e.kind).toBe("network");
    expect(e.message).toBe("connection refused (ECONNREFUSED)");
    client.close();
  });
});

describe("checkTargetUrl (a URL checked when it is set)", () => {
  const { resolver } = stubResolver({ "hooks.example": ["93.184.216.34"], "inside.example": ["93.184.216.34", "::ffff:10.0.0.1"] });

  it("accepts a public host and answers the parsed URL", async () => {
    expect(String(await checkTargetUrl("https://hooks.example/icv", { allowPrivate: false, resolver }))).toBe("https://hooks.example/icv");
  });

  it.each([
    // a refusal at set time also says how a local receiver is allowed
    ["http://127.0.0.1:8080/", `refused: 127.0.0.1 is a loopback address; ${PRIVATE_HINT}`],
    ["http://[::127.0.0.1]/", `refused: ::7f00:1 is an IPv4-compatible address; ${PRIVATE_HINT}`],
    ["http://[::ffff:169.254.169.254]/", `refused: ::ffff:a9fe:a9fe is a cloud metadata address; ${PRIVATE_HINT}`],
    ["http://2130706433/", `refused: 127.0.0.1 is a loopback address; ${PRIVATE_HINT}`],
    ["http://inside.example/", `refused: ::ffff:10.0.0.1 is a private address (inside.example resolves to it); ${PRIVATE_HINT}`],
    ["http://nowhere.example/", "nowhere.example does not resolve"],
    ["ftp://hooks.example/", "only http and https URLs are allowed, not ftp"],
  ])("refuses %s", async (url, message) => {
    const e = await refusedWith(checkTargetUrl(url, { allowPrivate: false, resolver }));
    expect(e.message).toBe(message);
  });

  it("allows loopback when private targets are allowed (local development, tests)", async () => {
    expect(String(await checkTargetUrl("http://127.0.0.1:8080/hook", { allowPrivate: true, resolver }))).toBe("http://127.0.0.1:8080/hook");
    await expect(checkTargetUrl("ftp://127.0.0.1/", { allowPrivate: true, resolver })).rejects.toThrow(/only http and https/);
  });
});
