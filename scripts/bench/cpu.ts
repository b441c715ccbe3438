// Where the machine's CPU went during a case (Linux /proc): the process under test, this bench
// process (autocannon), Postgres/Redis, and everything else. On a shared machine the ratios are
// only as good as the cores the bench actually had; CPU per request of the process under test
// is the number that holds up under contention.
import { readFileSync, readdirSync } from "node:fs";

const TICK = 100; // USER_HZ on Linux
const DATASTORES = new Set(["postgres", "redis-server"]);

interface Proc {
  ppid: number;
  comm: string;
  ticks: number;
}

function snapshot(): Map<number, Proc> {
  const all = new Map<number, Proc>();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const s = readFileSync(`/proc/${d}/stat`, "utf8");
      const comm = s.slice(s.indexOf("(") + 1, s.lastIndexOf(")"));
      const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
      // fields after the name: state(0) ppid(1) … utime(11) stime(12)
      all.set(Number(d), { ppid: Number(f[1]), comm, ticks: Number(f[11]) + Number(f[12]) });
    } catch {
      // gone meanwhile
    }
  }
  return all;
}

function machineBusyTicks(): number {
  const cpu = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal
  return cpu[0] + cpu[1] + cpu[2] + cpu[5] + cpu[6] + cpu[7];
}

function tally(all: Map<number, Proc>, target: number | undefined) {
  let ours = 0;
  const walk = (p: number) => {
    ours += all.get(p)?.ticks ?? 0;
    for (const [pid, s] of all) if (s.ppid === p) walk(pid);
  };
  walk(process.pid);
  const db = new Map<number, number>();
  for (const [pid, p] of all) if (DATASTORES.has(p.comm)) db.set(pid, p.ticks);
  // the process under test and its children (`npm start`'s workers)
  let tested = 0;
  const under = (p: number) => {
    tested += all.get(p)?.ticks ?? 0;
    for (const [pid, s] of all) if (s.ppid === p) under(pid);
  };
  if (target !== undefined) under(target);
  return { ours, db, target: tested, loadgen: all.get(process.pid)?.ticks ?? 0 };
}

export interface CpuWindow {
  /** mean cores used by the process under test (with its children: `npm start`'s workers) */
  target: number;
  /** mean cores used by this process (the load generator) */
  loadgen: number;
  /** mean cores used by Postgres and Redis server processes */
  db: number;
  /** mean cores used by everything else on the machine (other users' work) */
  others: number;
  /** CPU seconds of the process under test (and its children) in the window */
  targetSeconds: number;
}

/** Starts a window; the returned function closes it. `target()` names the process under test. */
export function cpuWindow(target: () => number | undefined = () => undefined): () => CpuWindow {
  const t0 = performance.now();
  const pid = target();
  const busy0 = machineBusyTicks();
  const a = tally(snapshot(), pid);
  return () => {
    const sec = (performance.now() - t0) / 1000;
    const busy = machineBusyTicks() - busy0;
    const b = tally(snapshot(), pid);
    // per server process: a Postgres backend that exits in the window takes its ticks with it, so
    // a sum's difference could go negative; the window loses that backend's share instead
    let db = 0;
    for (const [p, ticks] of b.db) db += ticks - (a.db.get(p) ?? 0);
    const d = { ours: b.ours - a.ours, db, target: b.target - a.target, loadgen: b.loadgen - a.loadgen };
    const per = (ticks: number) => ticks / TICK / sec;
    return {
      target: per(d.target),
      loadgen: per(d.loadgen),
      db: per(d.db),
      others: Math.max(0, per(busy - d.ours - d.db)),
      targetSeconds: d.target / TICK,
    };
  };
}
