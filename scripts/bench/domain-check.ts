// The DNS domain check (services/domain/src/dns.ts) against local authoritative servers: two
// name servers on 127.0.0.1 and 127.0.0.2, the first also the resolver, run in a child process
// (test/support/dns-server.ts) so the server does not share the checker's event loop. Each check
// is the real one: NS look-up, the name servers' addresses, TXT asked of both servers directly.
import { spawn } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";
import { checkDns } from "../../services/domain/src/dns.ts";
import { startDnsZones } from "../../test/support/dns-server.ts";
import { perSec, type Row } from "./report.ts";

const TOKEN = "icv-verify=YmVuY2gtZG9tYWluLWNoZWNrLXRva2VuLWZvci10aGUtYmVuY2gx";

/** Runs checks, `concurrency` at a time, for `seconds`; the table row (checks/s, p50, p99). */
export async function benchDomainCheck(seconds = 5, concurrency = 8): Promise<{ row: Row; rate: number }> {
  process.stderr.write(`  domain DNS check against a local authoritative server, ${concurrency} at once …\n`);
  const child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "serve"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout.once("data", (d: Buffer) => resolve(Number(String(d).trim())));
      child.once("exit", (c) => reject(new Error(`DNS server exited (${c})`)));
    });
    const opts = { resolvers: [{ host: "127.0.0.1", port }], authoritativePort: port, timeoutMs: 2_000, allowPrivate: true };
    const latencies: number[] = [];
    let failed = 0;
    const end = Date.now() + seconds * 1000;
    const cpu0 = process.cpuUsage();
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (Date.now() < end) {
          const t = performance.now();
          const r = await checkDns("bench.test", TOKEN, opts);
          latencies.push(performance.now() - t);
          if (!r.passed) failed++;
        }
      }),
    );
    const elapsed = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpu0);
    latencies.sort((a, b) => a - b);
    const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
    const rate = latencies.length / elapsed;
    const row: Row = {
      name: `domain check against a local authoritative server (2 servers, ${concurrency} at once)`,
      rate: perSec(rate, "checks/s"),
      p50: at(0.5),
      p99: at(0.99),
      ratio: `${latencies.length} checks, 5 DNS queries each`,
      target: "(info)",
      errors: failed,
      cpuMsPerOp: (cpu.user + cpu.system) / 1000 / Math.max(1, latencies.length),
    };
    return { row, rate };
  } finally {
    child.kill("SIGTERM");
  }
}

// the child: the two name servers, serving bench.test with the record; prints its port
if (process.argv[2] === "serve" && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const dns = await startDnsZones({ addresses: ["127.0.0.1", "127.0.0.2"] });
  dns.zone("bench.test", ["127.0.0.1", "127.0.0.2"]);
  dns.addTxt("_icv-challenge.bench.test", TOKEN);
  // the server keeps no query log in a long run
  dns.queries.push = () => 0;
  process.stdout.write(`${dns.port}\n`);
  process.once("SIGTERM", () => void dns.close().then(() => process.exit(0)));
}
