// vitest global setup: names the folder of this run's stack template (test/support/stack-template.ts),
// built by the run's first stack, and removes it (and its template database) when the run ends.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { dropDatabase } from "./fresh-postgres.ts";
import type { StackTemplate } from "./stack-template.ts";

export default function setup(project: TestProject) {
  const root = mkdtempSync(path.join(tmpdir(), "icv-template-"));
  project.provide("icvStackTemplateRoot", root);
  return async () => {
    const ready = path.join(root, "ready.json");
    const t = existsSync(ready) ? (JSON.parse(readFileSync(ready, "utf8")) as StackTemplate) : undefined;
    if (t?.database && process.env.DATABASE_URL) await dropDatabase(process.env.DATABASE_URL, t.database);
    rmSync(root, { recursive: true, force: true });
  };
}
