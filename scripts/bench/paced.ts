// An open-loop load at a steady rate: request i is due at start + i/rate, whether or not earlier
// ones have answered (up to `maxInFlight` sockets; beyond that it waits in the agent's queue, and
// that wait counts). Latency runs from the due time, so a stall is not hidden (no coordinated
// omission). autocannon's overallRate instead lets every connection send its per-second quota
// back to back at the top of each second, which is a burst of the full load, not half of it.
import http from "node:http";
import { cpuWindow } from "./cpu.ts";
import type { LoadResult } from "./load.ts";

export interface PacedOptions {
  url: string;
  headers?: Record<string, string>;
  rate: number;
  seconds: number;
  maxInFlight?: number;
  target?: () => number | undefined;
}

const percentile = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN);

export async function paced(opts: PacedOptions): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.maxInFlight ?? 50 });
  const u = new URL(opts.url);
  const latencies: number[] = [];
  const statusCodes: Record<string, number> = {};
  let errors = 0;
  let non2xx = 0;
  const total = Math.round(opts.rate * opts.seconds);
  const interval = 1000 / opts.rate;
  const window = cpuWindow(opts.target);
  const start = performance.now();
  let sent = 0;
  let done = 0;

  await new Promise<void>((resolve) => {
    const fire = (due: number) => {
      const req = http.request({ agent, host: u.hostname, port: u.port, path: u.pathname + u.search, method: "GET", headers: opts.headers }, (res) => {
        res.resume();
        res.on("end", () => {
          latencies.push(performance.now() - due);
          statusCodes[res.statusCode!] = (statusCodes[res.statusCode!] ?? 0) + 1;
          if (res.statusCode! < 200 || res.statusCode! > 299) non2xx++;
          if (++done === total) resolve();
        });
      });
      req.on("error", () => {
        errors++;
        if (++done === total) resolve();
      });
      req.end();
    };
    const tick = () => {
      const now = performance.now();
      while (sent < total && start + sent * interval <= now) fire(start + sent++ * interval);
      if (sent < total) setTimeout(tick, Math.max(0, start + sent * interval - performance.now()));
    };
    tick();
  });
  const elapsed = (performance.now() - start) / 1000;
  const cpu = window();
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return {
    rate: done / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    requests: done,
    non2xx,
    errors,
    mismatches: 0,
    statusCodes,
    cpu,
    cpuMsPerOp: done > 0 ? (cpu.targetSeconds * 1000) / done : NaN,
  };
}
