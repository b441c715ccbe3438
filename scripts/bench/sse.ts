// SSE fan-out: many open streams on one verification, one status change, and how long it takes to
// reach each stream. The streams are plain HTTP/1.1 responses read by this process.
import http from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { startBaseline } from "./stack.ts";

export interface SseResult {
  opened: number;
  /** ms to open every stream (until each saw `connected`) */
  openMs: number;
  /** streams that saw status_changed */
  received: number;
  /** ms from sending test-verify to each stream's status_changed */
  p50: number;
  p99: number;
  max: number;
  /** ms test-verify itself took (the proof is signed before the event exists) */
  verifyMs: number;
}

interface Stream {
  req: http.ClientRequest;
  buf: string;
  connectedAt?: number;
  changedAt?: number;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

/** Opens `count` streams on a fresh verification, test-verifies it and times the event's arrival. */
export async function benchSse(base: string, testKey: string, count: number, onOpened?: () => void): Promise<SseResult> {
  const auth = { authorization: `Bearer ${testKey}` };
  const created = await fetch(`${base}/api/v1/verifications`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ type: "phone", channel: "telegram", identifier: "+37069199100" }),
  });
  const v = (await created.json()) as { id: string };
  if (created.status !== 201) throw new Error(`create failed: ${created.status} ${JSON.stringify(v)}`);
  const { hostname, port } = new URL(base);
  const streams: Stream[] = [];
  const open = () =>
    new Promise<void>((resolve, reject) => {
      const s: Stream = { buf: "", req: undefined as unknown as http.ClientRequest };
      s.req = http.get({ hostname, port, path: `/api/v1/verifications/${v.id}/events`, headers: auth, agent: false }, (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`stream answered ${res.statusCode}`));
          return;
        }
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          const now = performance.now();
          s.buf += chunk;
          if (!s.connectedAt && s.buf.includes("event: connected")) {
            s.connectedAt = now;
            resolve();
          }
          if (!s.changedAt && s.buf.includes("event: status_changed")) s.changedAt = now;
          if (s.buf.length > 4096) s.buf = s.buf.slice(-256);
        });
      });
      s.req.on("error", reject);
      streams.push(s);
    });

  const began = performance.now();
  for (let i = 0; i < count; i += 500) await Promise.all(Array.from({ length: Math.min(500, count - i) }, open));
  const openMs = performance.now() - began;
  onOpened?.();
  await sleep(500);

  const sent = performance.now();
  const verified = await fetch(`${base}/api/v1/verifications/${v.id}/test-verify`, { method: "POST", headers: auth });
  await verified.arrayBuffer();
  const verifyMs = performance.now() - sent;
  if (verified.status !== 200) throw new Error(`test-verify failed: ${verified.status}`);
  const deadline = performance.now() + 10_000;
  while (streams.some((s) => !s.changedAt) && performance.now() < deadline) await sleep(10);

  const lat = streams
    .filter((s) => s.changedAt)
    .map((s) => s.changedAt! - sent)
    .sort((a, b) => a - b);
  for (const s of streams) s.req.destroy();
  return {
    opened: streams.length,
    openMs,
    received: lat.length,
    p50: percentile(lat, 50),
    p99: percentile(lat, 99),
    max: lat.at(-1) ?? NaN,
    verifyMs,
  };
}

/**
 * The same measurement against the fan-out floor (sse-floor.ts: a bare node:http process that
 * writes one event to every open stream), started for it and stopped after: what `count` streams
 * cost on this machine, with this client, before any of ICV's own work.
 */
export async function benchSseFloor(count: number): Promise<SseResult> {
  const floor = await startBaseline("sse-floor.ts");
  try {
    return await benchSse(floor.url, "none", count);
  } finally {
    await floor.stop();
  }
}
