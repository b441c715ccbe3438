// Scheduled domain re-checks (issue 27): 10,000 verified domains all due at once, swept by the
// verification service's re-check sweeper (UseCaseDeps.recheckDue: the claim with FOR UPDATE
// SKIP LOCKED, the check, the next due time) through the real domain service (Connect over mutual
// TLS on loopback, the per-server bound, the `_icv` policy asked beside each check) against a local
// authoritative DNS pair in a child process (test/support/dns-server.ts). The database is PGlite
// in memory, or a fresh database on DATABASE_URL. Figure: re-checks per second until none is due.
//
// In `npm run bench` (scripts/bench/cases.ts; only it: BENCH_CASES=rechecks), or without any stack:
// `node --import tsx scripts/bench/rechecks.ts`
// (env BENCH_RECHECKS, default 10000; RECHECK_BATCH, default 50; DNS_MAX_INFLIGHT_PER_SERVER, default 8).
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { DomainService } from "@icv/contracts/gen/icv/domain/v1/domain_service_pb.ts";
import type { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import type { Client } from "@connectrpc/connect";
import { createLogger, MemoryRateLimiter, migrate, openDatabase, parseConfig, readMigrations, rpcClient, serviceIdentity, systemClock } from "@icv/platform";
import { startDomainService } from "../../services/domain/src/start.ts";
import { SendLimits } from "../../services/verification/src/sending/send-limits.ts";
import { VerificationStore } from "../../services/verification/src/store/verifications.ts";
import { useCaseDeps } from "../../services/verification/src/verifications/deps.ts";
import { recheckDue } from "../../services/verification/src/verifications/domain-checks.ts";
import { freshPostgres } from "../../test/support/fresh-postgres.ts";
import { startDnsZones } from "../../test/support/dns-server.ts";
import { perSec, type Row } from "./report.ts";

const TOKEN = "YmVuY2gtcmVjaGVjay10b2tlbi1mb3ItdGhlLWJlbmNoLTAx";
const ZONE = "rechecks.test";
const MIGRATIONS = fileURLToPath(new URL("../../services/verification/migrations", import.meta.url));

/** Sweeps `count` due re-checks to the end; the table row and the rate. */
export async function benchRechecks(count = 10_000, pgUrl = process.env.DATABASE_URL): Promise<{ row: Row; rate: number; failed: number }> {
  process.stderr.write(`  scheduled re-checks: ${count} verified domains due at once …\n`);
  const child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "serve", String(count)], { stdio: ["ignore", "pipe", "inherit"] });
  const dataDir = mkdtempSync(path.join(tmpdir(), "icv-bench-rechecks-"));
  const pg = pgUrl ? await freshPostgres(pgUrl) : undefined;
  const logger = createLogger({ level: "warn" });
  const closers: Array<() => Promise<unknown> | void> = [];
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout.once("data", (d: Buffer) => resolve(Number(String(d).trim())));
      child.once("exit", (c) => reject(new Error(`DNS server exited (${c})`)));
    });
    const config = parseConfig({
      DATA_DIR: dataDir,
      DOMAIN_GRPC_PORT: "0",
      GRPC_HOST: "127.0.0.1",
      DNS_RESOLVERS: `127.0.0.1:${port}`,
      DNS_AUTHORITATIVE_PORT: String(port),
      ALLOW_PRIVATE_TARGETS: "true",
      RECHECK_MIN_INTERVAL_S: "60",
      ...Object.fromEntries(["RECHECK_BATCH", "DNS_MAX_INFLIGHT_PER_SERVER"].filter((k) => process.env[k]).map((k) => [k, process.env[k]!])),
    });
    const domainSvc = await startDomainService(config, logger);
    closers.push(() => domainSvc.close());
    const identity = await serviceIdentity(config, "verification", logger);
    closers.push(() => identity.close());
    const db = await openDatabase(pg ? { url: pg.url, poolMax: 10 } : { dataDir: "memory://" });
    closers.push(() => db.close());
    await migrate(db, "verification", readMigrations(MIGRATIONS));
    await seed(db, count);
    // a passing re-check of a verified proof calls no proof RPC: none is given
    const proofs = new Proxy({} as Client<typeof ProofService>, {
      get: () => () => Promise.reject(new Error("no proof call expected")),
    });
    const vs = useCaseDeps({
      store: new VerificationStore(db),
      proofs,
      domains: rpcClient(DomainService, domainSvc.url, identity, 45_000),
      config,
      clock: systemClock,
      hmacKey: "k".repeat(32),
      logger,
      sendLimits: new SendLimits({ limiter: new MemoryRateLimiter(), keySecret: "k".repeat(32), budgetPerHour: 1000 }),
    });
    const cpu0 = process.cpuUsage();
    const started = performance.now();
    let done = 0;
    for (;;) {
      const n = await recheckDue(vs);
      if (!n) break;
      done += n;
    }
    const elapsed = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const failed = Number(
      (
        await db.query<{ n: string }>(
          "SELECT count(*) AS n FROM verification.domain_checks WHERE last_check IS NULL OR (last_check->>'passed')::boolean IS NOT TRUE",
        )
      ).rows[0].n,
    );
    const rate = done / elapsed;
    const row: Row = {
      name: `scheduled re-checks, ${count.toLocaleString("en-US")} due proofs (batch ${config.RECHECK_BATCH}, ≤ ${config.DNS_MAX_INFLIGHT_PER_SERVER} per name server)`,
      rate: perSec(rate, "re-checks/s"),
      ratio: `${done} re-checks in ${elapsed.toFixed(1)} s, ${pg ? "Postgres" : "PGlite"}`,
      target: "(info)",
      errors: failed,
      cpuMsPerOp: (cpu.user + cpu.system) / 1000 / Math.max(1, done),
    };
    return { row, rate, failed };
  } finally {
    for (const c of closers.reverse()) await c();
    child.kill("SIGTERM");
    await pg?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** `count` verified live domains (the record at each on both servers), every one due now. */
async function seed(db: Awaited<ReturnType<typeof openDatabase>>, count: number): Promise<void> {
  await db.query(
    `INSERT INTO verification.verifications (id, tenant_id, environment, type, channel, identifier, identifier_canonical, status,
       challenge_expires_at, instruction, proof_expires_in, proof_token, proof_expires_at, created_at, updated_at, verified_at)
     SELECT 'ver_bench' || i, 'ten_bench', 'live', 'domain', 'dns', 'd' || i || '.${ZONE}', 'd' || i || '.${ZONE}', 'verified',
       now() + interval '1 day', 'bench', 2592000, 'x', now() + interval '30 days', now(), now(), now()
       FROM generate_series(1, $1::int) AS i`,
    [count],
  );
  await db.query(
    `INSERT INTO verification.domain_checks (verification_id, tenant_id, environment, token, recheck_interval_s, next_recheck_at)
     SELECT 'ver_bench' || i, 'ten_bench', 'live', $2, 3600, now() - interval '1 second' FROM generate_series(1, $1::int) AS i`,
    [count, TOKEN],
  );
}

// the child: the two name servers of the zone, the record at every domain; prints its port
if (process.argv[2] === "serve" && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const dns = await startDnsZones({ addresses: ["127.0.0.1", "127.0.0.2"] });
  dns.zone(ZONE, ["127.0.0.1", "127.0.0.2"]);
  for (let i = 1; i <= Number(process.argv[3]); i++) dns.addTxt(`_icv-challenge.d${i}.${ZONE}`, `icv-verify=${TOKEN}`);
  dns.queries.push = () => 0;
  process.stdout.write(`${dns.port}\n`);
  process.once("SIGTERM", () => void dns.close().then(() => process.exit(0)));
} else if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  // alone: this one case, once
  const { row, failed } = await benchRechecks(Number(process.env.BENCH_RECHECKS ?? 10_000));
  process.stdout.write(`${row.name}: ${row.rate} (${row.ratio}; ${row.cpuMsPerOp?.toFixed(2)} CPU ms each in this process; ${failed} did not pass)\n`);
  process.exit(0);
}
