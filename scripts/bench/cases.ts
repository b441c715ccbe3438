// The hook for extra bench cases: each lives in its own file under scripts/bench/ and is added
// here with one line. The bench runs every case once per database mode, on the running stack,
// after the built-in cases, and prints its rows in that mode's table (and its figures in --json).
// A case's shape is in case.ts, so that a case file and this list do not import each other.
import { benchDomainCheck } from "./domain-check.ts";
import { benchRechecks } from "./rechecks.ts";
import { sdJwtVcCase, statusListCase } from "./proof-formats.ts";
import { logCase } from "./log.ts";
import { minimalBaselineCase } from "./minimal-baseline.ts";
import { personalDataCase } from "./personal-data.ts";
import type { BenchCase } from "./case.ts";

/** The DNS domain check (domain-check.ts): it asks DNS only, so its figures are the same in either database mode. */
const domainCheckCase: BenchCase = {
  name: "domain check",
  async run(ctx) {
    const { row, rate } = await benchDomainCheck(Math.min(ctx.duration, 5));
    return { rows: [row], figures: { domain_checks_per_s: rate, domain_check_p50_ms: row.p50 ?? 0, domain_check_p99_ms: row.p99 ?? 0 } };
  },
};

/** Scheduled re-checks of 10,000 due proofs (rechecks.ts), on this mode's database. */
const recheckCase: BenchCase = {
  name: "rechecks",
  async run(ctx) {
    const { row, rate } = await benchRechecks(10_000, ctx.mode === "postgres" ? process.env.DATABASE_URL : undefined);
    return { rows: [row], figures: { rechecks_per_s: rate } };
  },
};

/** Extra cases, one line each. */
export const extraCases: BenchCase[] = [domainCheckCase, sdJwtVcCase, statusListCase, recheckCase, logCase, minimalBaselineCase, personalDataCase];
