// What an extra bench case is (the list of them: cases.ts).
import type { Row } from "./report.ts";
import type { RunningStack } from "./stack.ts";

export type BenchMode = "embedded" | "postgres";

export interface BenchContext {
  mode: BenchMode;
  /** the stack as `npm start` runs it in this mode (url, adminUrl, mainPid for CPU accounting) */
  stack: RunningStack;
  /** the stack's database on the server (Postgres mode only) */
  databaseUrl?: string;
  testKey: string;
  liveKey: string;
  /** seconds per measured run, warm-up seconds, autocannon connections */
  duration: number;
  warmup: number;
  connections: number;
}

export interface BenchCase {
  name: string;
  /** notes: printed after the mode's table (longer findings, such as a per-statement table) */
  run(ctx: BenchContext): Promise<{ rows: Row[]; figures: Record<string, number>; notes?: string[] }>;
}
