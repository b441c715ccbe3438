// The first start of a stack, made once per test run: a stack started on a fresh data dir (and,
// with DATABASE_URL, a fresh database) and closed, kept as a template that every later
// startStack copies instead of repeating initdb, every service's migrations, the TLS CA and
// certificates and the signing keys (see docs/testing.md). The vitest global setup
// (test/support/global-setup.ts) names the folder; the first stack of the run builds it there,
// under a lock, and the others wait for it. Without that folder (another runner) every stack
// starts from nothing.
import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { inject } from "vitest";

export interface StackTemplate {
  /** The closed stack's DATA_DIR: pgdata (embedded), secrets, tls. */
  dataDir: string;
  /** The template database on the Postgres of DATABASE_URL, when it is set. */
  database?: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    icvStackTemplateRoot: string;
  }
}

/**
 * Overrides that change what a first start makes (where the data lives, the keys and certificates
 * it generates): a stack started with any of them starts from nothing.
 */
const FIRST_START = /DATA_DIR|DATABASE_URL|^TLS_(DIR|CA_FILE|CERT_FILE|KEY_FILE)$|^PROOF_KEY_|^CHALLENGE_HMAC_KEY$/;

export const usesTemplate = (overrides: Record<string, string>): boolean => !Object.keys(overrides).some((k) => FIRST_START.test(k));

function root(): string | undefined {
  try {
    return inject("icvStackTemplateRoot");
  } catch {
    return undefined; // not inside a vitest worker
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * This run's template, built by the first caller (`build` starts and closes a stack in the given
 * dir and answers its database), or undefined when there is none (no global setup, or building it
 * failed: the stack then starts from nothing and shows the failure itself).
 */
export async function stackTemplate(build: (dataDir: string) => Promise<string | undefined>): Promise<StackTemplate | undefined> {
  const dir = root();
  if (!dir) return undefined;
  const ready = path.join(dir, "ready.json");
  const failed = path.join(dir, "failed");
  const read = (): StackTemplate | undefined => (existsSync(ready) ? (JSON.parse(readFileSync(ready, "utf8")) as StackTemplate) : undefined);
  const done = read();
  if (done || existsSync(failed)) return done;
  try {
    mkdirSync(path.join(dir, "lock"));
  } catch {
    // another worker builds it: wait (a stack start takes seconds); past 90 s the later stacks
    // start from nothing rather than each waiting again
    for (const until = Date.now() + 90_000; Date.now() < until && !existsSync(failed); await sleep(50)) {
      const t = read();
      if (t) return t;
    }
    if (!existsSync(ready)) writeFileSync(failed, "");
    return read();
  }
  const dataDir = path.join(dir, "data");
  try {
    const database = await build(dataDir);
    const t: StackTemplate = { dataDir, database };
    writeFileSync(`${ready}.tmp`, JSON.stringify(t));
    renameSync(`${ready}.tmp`, ready);
    return t;
  } catch {
    writeFileSync(failed, "");
    return undefined;
  }
}

/**
 * Each stack's own secrets, as before there was a template: the challenge HMAC key (which also
 * keys the send limits' Redis counters, so stacks on one Redis never share them) and the admin
 * token. The proof key-encryption key is copied: it seals the signing keys in the database.
 */
const OWN = new Set([path.join("secrets", "challenge-hmac-key"), path.join("secrets", "admin-token")]);

/** Copies the template's data dir into a stack's fresh one. */
export const copyTemplate = (t: StackTemplate, dataDir: string): void =>
  cpSync(t.dataDir, dataDir, { recursive: true, filter: (src) => !OWN.has(path.relative(t.dataDir, src)) });
