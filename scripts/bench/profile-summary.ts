// Summarizes a V8 .cpuprofile (as written by BENCH_CPU_PROF): self time by function and by
// package/file, and inclusive time of functions whose name matches a filter.
// usage: node --import tsx scripts/bench/profile-summary.ts FILE.cpuprofile [top=30] [inclusive-filter-regex] [fromUs,toUs]
// (the window, in CLOCK_MONOTONIC microseconds as profile-case prints it, keeps only those samples)
import { readFileSync } from "node:fs";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: Node[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg, filter, windowArg] = process.argv.slice(2);
const [fromUs, toUs] = windowArg ? windowArg.split(",").map(Number) : [-Infinity, Infinity];
if (!file) {
  process.stderr.write("usage: profile-summary FILE.cpuprofile [top] [inclusive-filter-regex]\n");
  process.exit(1);
}
const top = Number(topArg ?? 30);
const p = JSON.parse(readFileSync(file, "utf8")) as Profile;
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

// time per node from samples × deltas (more accurate than hitCount × interval)
const selfUs = new Map<number, number>();
let at = p.startTime;
for (let i = 0; i < p.samples.length; i++) {
  at += p.timeDeltas[i];
  if (at < fromUs || at > toUs) continue;
  selfUs.set(p.samples[i], (selfUs.get(p.samples[i]) ?? 0) + (p.timeDeltas[i + 1] ?? 0));
}
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);

const where = (url: string) => {
  if (!url) return "(native/v8)";
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  const w = /\/work\/main\/(.*)$/.exec(url);
  if (w) return w[1];
  return url.replace(/^file:\/\//, "");
};
const label = (n: Node) => `${n.callFrame.functionName || "(anonymous)"} ${where(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;

const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
const fnSelf = new Map<string, number>();
const pkgSelf = new Map<string, number>();
for (const [id, us] of selfUs) {
  const n = byId.get(id)!;
  add(fnSelf, label(n), us);
  add(pkgSelf, n.callFrame.url ? where(n.callFrame.url).split("/").slice(0, 3).join("/") : n.callFrame.functionName || "(anonymous)", us);
}
const print = (title: string, m: Map<string, number>, k = top) => {
  process.stdout.write(`\n${title}\n`);
  for (const [name, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, k)) {
    process.stdout.write(`${((us / total) * 100).toFixed(1).padStart(6)} %  ${(us / 1000).toFixed(0).padStart(7)} ms  ${name}\n`);
  }
};
process.stdout.write(`${file}: ${(total / 1e6).toFixed(1)} s sampled\n`);
print("self time by package / file", pkgSelf);
print("self time by function", fnSelf);

if (filter) {
  // inclusive time: each sample counts once for every distinct matching frame on its stack
  const re = new RegExp(filter);
  const incl = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const l = label(byId.get(cur)!);
      if (re.test(l) && !seen.has(l)) {
        seen.add(l);
        add(incl, l, us);
      }
    }
  }
  print(`inclusive time of frames matching /${filter}/`, incl);
}
