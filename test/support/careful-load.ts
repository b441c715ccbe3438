// The load of the outage tests: careful clients creating verifications through an outage, and
// the check afterwards that every one answered 201 exists exactly once and completes.
import { expect } from "vitest";
import type { api } from "./stack.ts";

type Client = ReturnType<typeof api>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface CarefulLoad {
  /** Answers seen, by HTTP status. */
  statuses: Map<number, number>;
  /** The verifications answered 201. */
  created: string[];
  /** The first 503's Retry-After and error code. */
  unavailable?: { retryAfter: string | null; code: string };
  /** Ends the load once each client has its answer. */
  stop(): Promise<void>;
}

/**
 * `clients` careful clients, each creating SMS verifications of numbers `+370<prefix>NNNNN` one
 * after another, with one Idempotency-Key per verification, retried after a 503 (or while its
 * first try is still "in progress") until it gets its answer. Any other answer fails the load.
 */
export function carefulLoad(c: Client, prefix: string, clients = 3): CarefulLoad {
  const load: CarefulLoad = { statuses: new Map(), created: [], stop: async () => undefined };
  const { statuses, created } = load;
  let n = 0;
  let stopped = false;
  const client = async () => {
    while (!stopped) {
      const i = n++;
      const body = { type: "phone", channel: "sms", identifier: `+370${prefix}${String(10000 + i).padStart(5, "0")}` };
      for (;;) {
        const r = await c.post("/api/v1/verifications", body, { "idempotency-key": `${prefix}-${i}` });
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        if (r.status === 201) {
          created.push(r.body.id);
          break;
        }
        if (r.status === 503) load.unavailable ??= { retryAfter: r.headers.get("retry-after"), code: r.body?.error?.code };
        if (r.status !== 503 && !(r.status === 409 && r.body?.error?.code === "invalid_state")) throw new Error(`unexpected ${r.status}`);
        await sleep(100);
      }
    }
  };
  const running = Promise.all(Array.from({ length: clients }, client));
  load.stop = async () => {
    stopped = true;
    await running;
  };
  return load;
}

/** Within `ms`, reads answer 200 again and the load gets ten more verifications created. */
export async function expectServingAgain(c: Client, load: CarefulLoad, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while ((await c.get("/api/v1/verifications?limit=1")).status !== 200 && Date.now() < deadline) await sleep(100);
  const before = load.created.length;
  while (load.created.length < before + 10 && Date.now() < deadline) await sleep(50);
  expect(load.created.length).toBeGreaterThanOrEqual(before + 10);
}

/** Every verification answered 201 is listed exactly once, and the last five complete with a proof. */
export async function expectEachOnceAndWorking(c: Client, created: string[]): Promise<void> {
  const listed: string[] = [];
  for (let page = 1; ; page++) {
    const r = await c.get(`/api/v1/verifications?limit=100&page=${page}`);
    expect(r.status).toBe(200);
    listed.push(...r.body.data.map((v: { id: string }) => v.id));
    if (!r.body.pagination.hasMore) break;
  }
  expect(listed.sort()).toEqual([...created].sort());
  for (const id of created.slice(-5)) {
    const done = await c.post(`/api/v1/verifications/${id}/test-verify`);
    expect(done.status).toBe(200);
    expect(done.body.status).toBe("verified");
  }
}
