// The one table the bench prints.
export interface Row {
  name: string;
  rate?: string;
  p50?: number;
  p99?: number;
  ratio?: string;
  target: string;
  /** undefined: informational row */
  pass?: boolean;
  errors?: number;
  /** where the CPU went during the case, and CPU ms per operation of the process under test */
  cpu?: { target: number; loadgen: number; db: number; others: number };
  cpuMsPerOp?: number;
}

const ms = (v?: number) => (v === undefined ? "" : `${v.toFixed(v < 10 ? 2 : 1)} ms`);

export const perSec = (v: number, unit = "req/s") => `${Math.round(v).toLocaleString("en-US")} ${unit}`;
export const pct = (v: number) => `${(v * 100).toFixed(1)} %`;
export const mb = (bytes?: number) => (bytes === undefined ? "?" : `${(bytes / 1024 / 1024).toFixed(0)} MB`);

export function table(rows: Row[]): string {
  const head = ["case", "rate", "p50", "p99", "ratio / value", "target", "result", "non-2xx+err", "CPU ms/op", "cores: tested/loadgen/db/other"];
  const cells = rows.map((r) => [
    r.name,
    r.rate ?? "",
    ms(r.p50),
    ms(r.p99),
    r.ratio ?? "",
    r.target,
    r.pass === undefined ? "" : r.pass ? "pass" : "FAIL",
    r.errors === undefined ? "" : String(r.errors),
    r.cpuMsPerOp === undefined || Number.isNaN(r.cpuMsPerOp) ? "" : r.cpuMsPerOp.toFixed(3),
    r.cpu ? [r.cpu.target, r.cpu.loadgen, r.cpu.db, r.cpu.others].map((v) => v.toFixed(2)).join(" / ") : "",
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) => `| ${c.map((v, i) => (i === 0 ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join(" | ")} |`;
  const sep = `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`;
  return [line(head), sep, ...cells.map(line)].join("\n");
}
