// A baseline: how many primary-key SELECTs per second one process gets from the database the
// stack runs on (a pg pool of 10 against Postgres, or an in-memory PGlite in this process), with
// the same named prepared statements the Database adapter uses.
import { openDatabase } from "@icv/platform";

export interface PkSelectRate {
  perSecond: number;
  /** CPU ms of this process per SELECT (the driver's share; Postgres's own is not in it) */
  cpuMsPerOp: number;
}

export async function measurePkSelects(seconds: number, pgUrl?: string): Promise<PkSelectRate> {
  const db = await openDatabase(pgUrl ? { url: pgUrl, poolMax: 10, label: "bench" } : { dataDir: "memory://", label: "bench" });
  try {
    await db.exec(`CREATE TABLE IF NOT EXISTS bench_pk (id text PRIMARY KEY, tenant_id text NOT NULL, body text NOT NULL);
      INSERT INTO bench_pk SELECT 'ver_' || g, 'ten_1', repeat('x', 200) FROM generate_series(1, 1000) g ON CONFLICT DO NOTHING;`);
    let n = 0;
    const run = async (until: number) => {
      while (performance.now() < until) {
        await db.query(`SELECT * FROM bench_pk WHERE id = $1 AND tenant_id = $2`, [`ver_${(n++ % 1000) + 1}`, "ten_1"]);
      }
    };
    await Promise.all(Array.from({ length: 10 }, () => run(performance.now() + 500))); // warm-up
    n = 0;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await Promise.all(Array.from({ length: 10 }, () => run(t0 + seconds * 1000)));
    const sec = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    return { perSecond: n / sec, cpuMsPerOp: (cpu.user + cpu.system) / 1000 / n };
  } finally {
    await db.exec(`DROP TABLE IF EXISTS bench_pk`).catch(() => undefined);
    await db.close();
  }
}
