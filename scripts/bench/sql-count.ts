// SQL statements per proof, counted for real: the stack counts every statement it sends
// (icv_sql_statements_total on the admin listener's /metrics, by database user), and this case
// reads the counter around a run of create + test-verify, request and background work both:
// it waits until the event pipeline has gone quiet again and subtracts the idle polling.
import { setTimeout as sleep } from "node:timers/promises";

/** The stack's statement counters, by database user (service name, `events`). */
export async function sqlCounts(adminUrl: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^icv_sql_statements_total\{db="([^"]+)"\} (\d+)/gm)) out.set(m[1], Number(m[2]));
  return out;
}

const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

export interface SqlPerProof {
  proofs: number;
  /** statements per proof, request and background together, idle polling subtracted */
  perProof: number;
  /** statements per proof sent while the requests ran (the requests and what the pipeline did meanwhile) */
  duringRequests: number;
  /** per database user, per proof */
  byDb: Record<string, number>;
  /** statements per second while idle (pollers), subtracted */
  idlePerSec: number;
}

/** One create + test-verify; throws unless a proof came back. */
async function oneProof(url: string, testKey: string): Promise<void> {
  const auth = { authorization: `Bearer ${testKey}` };
  const c = await fetch(`${url}/api/v1/verifications`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ type: "phone", channel: "telegram", identifier: "+37069199199", external_user_id: "bench-user" }),
  });
  const created = (await c.json()) as { id?: string };
  if (c.status !== 201 || !created.id) throw new Error(`create answered ${c.status}`);
  const v = await fetch(`${url}/api/v1/verifications/${created.id}/test-verify`, { method: "POST", headers: auth });
  const verified = (await v.json()) as { proof_token?: string };
  if (v.status !== 200 || !verified.proof_token) throw new Error(`test-verify answered ${v.status}`);
}

/** Statements per second of the idle stack (pumps polling, gauges): measure it before any load. */
export async function idleSqlRate(adminUrl: string, ms = 3000): Promise<number> {
  const i0 = await sqlCounts(adminUrl);
  await sleep(ms);
  const i1 = await sqlCounts(adminUrl);
  return ((total(i1) - total(i0)) * 1000) / ms;
}

/**
 * `proofs` create + test-verify pairs, `concurrency` at a time, and the statements they cost.
 * The idle rate (idleSqlRate, measured while nothing ran) is subtracted; the pipeline counts as
 * drained once a second passes with no more than 1.5 times the idle rate (at most 30 s).
 */
export async function measureSqlPerProof(
  url: string,
  adminUrl: string,
  testKey: string,
  idlePerSec: number,
  proofs = 300,
  concurrency = 10,
): Promise<SqlPerProof> {
  const before = await sqlCounts(adminUrl);
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < proofs) {
        next++;
        await oneProof(url, testKey);
      }
    }),
  );
  const during = await sqlCounts(adminUrl);
  let last = total(during);
  const deadline = performance.now() + 30_000;
  for (;;) {
    await sleep(1000);
    const now = total(await sqlCounts(adminUrl));
    if (now - last <= idlePerSec * 1.5 + 2 || performance.now() > deadline) break;
    last = now;
  }
  const after = await sqlCounts(adminUrl);
  const seconds = (performance.now() - t0) / 1000;
  const idle = idlePerSec * seconds;
  const byDb: Record<string, number> = {};
  for (const [db, n] of after) {
    const d = n - (before.get(db) ?? 0);
    if (d > 0) byDb[db] = d / proofs;
  }
  return {
    proofs,
    perProof: Math.max(0, total(after) - total(before) - idle) / proofs,
    duringRequests: (total(during) - total(before)) / proofs,
    byDb,
    idlePerSec,
  };
}
