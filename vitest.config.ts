import { configDefaults, defineConfig } from "vitest/config";

const ALL = ["packages/*/test/**/*.test.ts", "services/*/test/**/*.test.ts", "test/**/*.test.ts"];
// Files whose assertions measure time or throughput under load (outages, retry spacing): they run
// after the others, one at a time, with the machine to themselves.
const ALONE = ["test/resilience/**/*.test.ts", "test/e2e/webhooks.test.ts", "test/e2e/chaos.test.ts"];
// Files that switch on or assert process-wide state (the OpenTelemetry provider, counts in the
// metrics registry, the monotonic id factory) get a fresh process each; every other file shares its worker's loaded modules with
// the files before it (isolate: false), which saves importing the whole stack anew per file
// (about a third of the suite's CPU).
const OWN_PROCESS = [
  "packages/platform/test/event-traces.test.ts",
  "packages/platform/test/ids.test.ts",
  "packages/platform/test/in-process.test.ts",
  "packages/platform/test/observability.test.ts",
  "test/e2e/observability.test.ts",
  "test/e2e/trace-events.test.ts",
  "test/e2e/trace-redis.test.ts",
];
// With DATABASE_URL each stack holds 20–40 connections, hence fewer files at once there.
const PG = Boolean(process.env.DATABASE_URL);

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: "forks",
    // the run's first stack start is kept and copied by the later ones (test/support/stack-template.ts)
    globalSetup: ["test/support/global-setup.ts"],
    reporters: ["default"],
    projects: [
      {
        extends: true,
        test: {
          name: "side-by-side",
          include: ALL,
          exclude: [...configDefaults.exclude, ...ALONE, ...OWN_PROCESS],
          // Files mostly wait (HTTP, SMTP, SSE, the outbox relay), so they run side by side:
          // vitest's default on 2 cores is a single worker.
          maxWorkers: PG ? 2 : 3,
          isolate: false,
          sequence: { groupOrder: 0 },
        },
      },
      { extends: true, test: { name: "own-process", include: OWN_PROCESS, maxWorkers: 1, sequence: { groupOrder: 0 } } },
      { extends: true, test: { name: "alone", include: ALONE, maxWorkers: 1, sequence: { groupOrder: 1 } } },
    ],
  },
});
