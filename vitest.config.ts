import { configDefaults, defineConfig } from "vitest/config";

const ALL = ["packages/*/test/**/*.test.ts", "services/*/test/**/*.test.ts", "test/**/*.test.ts"];
// Files whose assertions measure time or throughput under load (outages, retry spacing): they run
// after the others, one at a time, with the machine to themselves.
const ALONE = ["test/resilience/**/*.test.ts", "test/e2e/webhooks.test.ts"];

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
          exclude: [...configDefaults.exclude, ...ALONE],
          // Files mostly wait (HTTP, SMTP, SSE, the outbox relay), so they run side by side:
          // vitest's default on 2 cores is a single worker. With DATABASE_URL each stack holds
          // 20–40 connections of the server's 100 (max_connections), hence 2 there.
          maxWorkers: process.env.DATABASE_URL ? 2 : 4,
          sequence: { groupOrder: 0 },
        },
      },
      { extends: true, test: { name: "alone", include: ALONE, maxWorkers: 1, sequence: { groupOrder: 1 } } },
    ],
  },
});
