// npm run monitor -- --subject example.com [--since 2026-01-01T00:00:00Z | --since <leaf index>]
//   [--url https://icv.example.com] [--env live|test] [--state file] [--interval ms] [--once]
//
// Follows the transparency log over its public HTTP endpoints only: it checks every checkpoint's
// Ed25519 signature against the log key (pinned in its state at the first run), the consistency
// proof from the last checkpoint it saw, and that the entries it read hash to the checkpoint's
// root; it prints each proof issued or revoked for the subject. Its state (the log key, the last
// checkpoint, its copy of the tree's right edge) is a small JSON file, so a restart goes on where
// it stopped. Exit code 1 on a log that misbehaves (a bad signature, a fork, a rollback).
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { CompactRange, leafHash, verifyCheckpoint, verifyConsistency } from "./monitor/tlog.ts";

const { values: args } = parseArgs({
  options: {
    subject: { type: "string" },
    since: { type: "string" },
    url: { type: "string", default: `http://127.0.0.1:${process.env.PORT ?? 3000}` },
    env: { type: "string", default: "live" },
    state: { type: "string" },
    interval: { type: "string", default: "5000" },
    once: { type: "boolean", default: false },
  },
});
if (!args.subject)
  fail(
    "usage: npm run monitor -- --subject <domain, wallet, handle, or salted identifier hash> [--since <time|index>] [--url …] [--env live|test] [--state file] [--once]",
  );
if (args.env !== "live" && args.env !== "test") fail("--env is live or test");
const subject = args.subject!.trim().toLowerCase();
const base = args.url!.replace(/\/+$/, "");
const statePath = args.state ?? `icv-monitor-${args.env}.json`;
const since: { index: number } | { time: number } | undefined =
  args.since === undefined ? undefined : /^\d+$/.test(args.since) ? { index: Number(args.since) } : { time: Date.parse(args.since) };
if (since && "time" in since && Number.isNaN(since.time)) fail("--since is a time (ISO 8601) or a leaf index");

interface State {
  url: string;
  env: string;
  vkey: string;
  size: number;
  root: string;
  /** the right edge of the tree the monitor has read (base64 hashes) */
  range: string[];
}

function fail(message: string): never {
  process.stderr.write(`monitor: ${message}\n`);
  process.exit(1);
}

async function get(path: string): Promise<Response> {
  const sep = path.includes("?") ? "&" : "?";
  const r = await fetch(`${base}${path}${sep}env=${args.env}`);
  if (!r.ok) throw new Error(`GET ${path}: ${r.status} ${await r.text()}`);
  return r;
}

function load(): State | undefined {
  if (!existsSync(statePath)) return undefined;
  const s = JSON.parse(readFileSync(statePath, "utf8")) as State;
  if (s.url !== base || s.env !== args.env) fail(`${statePath} follows ${s.url} (${s.env}), not ${base} (${args.env})`);
  return s;
}

function save(s: State): void {
  writeFileSync(`${statePath}.tmp`, `${JSON.stringify(s)}\n`);
  renameSync(`${statePath}.tmp`, statePath);
}

/** Reads the entries of [from, to), adds them to the range and prints the subject's. */
async function readEntries(range: CompactRange, to: number): Promise<void> {
  while (range.size < to) {
    const end = Math.min(to, range.size + 1000);
    const { entries } = (await (await get(`/api/v1/log/entries?start=${range.size}&end=${end}`)).json()) as { entries: string[] };
    if (entries.length !== end - range.size) throw new Error(`the log answered ${entries.length} entries for [${range.size}, ${end})`);
    for (const b64 of entries) {
      const raw = Buffer.from(b64, "base64");
      const index = range.size;
      range.add(leafHash(raw));
      const e = JSON.parse(raw.toString("utf8"));
      if (String(e.subject).toLowerCase() !== subject) continue;
      if (since && ("index" in since ? index < since.index : Date.parse(e.logged_at) < since.time)) continue;
      process.stdout.write(
        `${e.logged_at} ${e.kind} ${e.proof_id} ${e.type}/${e.channel} method=${e.method} env=${e.env} token_sha256=${e.token_sha256} leaf=${index}\n`,
      );
    }
  }
}

async function step(state: State | undefined): Promise<State> {
  const vkey = state?.vkey ?? (await (await get("/.well-known/icv-log-key")).text()).trim();
  const cp = verifyCheckpoint(await (await get("/api/v1/log/checkpoint")).text(), vkey);
  const range = new CompactRange(
    state?.size ?? 0,
    (state?.range ?? []).map((h) => Buffer.from(h, "base64")),
  );
  if (state) {
    if (cp.size < state.size) throw new Error(`the log went back from size ${state.size} to ${cp.size}`);
    if (state.size > 0) {
      const { proof } = (await (await get(`/api/v1/log/consistency?first=${state.size}&second=${cp.size}`)).json()) as { proof: string[] };
      const ok = verifyConsistency(
        state.size,
        cp.size,
        Buffer.from(state.root, "base64"),
        cp.root,
        proof.map((p) => Buffer.from(p, "base64")),
      );
      if (!ok) throw new Error(`the checkpoint of size ${cp.size} is not consistent with the one of size ${state.size} (a fork)`);
    }
  }
  await readEntries(range, cp.size);
  if (!range.root().equals(cp.root)) throw new Error(`the entries up to ${cp.size} do not hash to the checkpoint's root`);
  const next = { url: base, env: args.env!, vkey, size: cp.size, root: cp.root.toString("base64"), range: range.hashes.map((h) => h.toString("base64")) };
  save(next);
  return next;
}

let state = load();
process.stderr.write(`monitor: following ${base} (${args.env} log) for ${subject}; state in ${statePath}\n`);
// A stop (SIGTERM, Ctrl-C) waits for the step under way to save its state, so a restart does not
// print again what this run printed; a crash may (a finding is printed at least once, never lost).
const stop = new AbortController();
for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => stop.abort());
while (!stop.signal.aborted) {
  try {
    const before = state?.size;
    state = await step(state);
    if (before !== state.size) process.stderr.write(`monitor: checkpoint ${state.size} verified\n`);
  } catch (e) {
    const m = (e as Error).message;
    // the log misbehaving is the monitor's finding: it stops and says so
    if (/fork|went back|not signed|do not hash|origin|key/.test(m)) fail(m);
    process.stderr.write(`monitor: ${m}; retrying\n`);
  }
  if (args.once) break;
  await sleep(Number(args.interval), undefined, { signal: stop.signal }).catch(() => undefined);
}
