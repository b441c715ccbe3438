// The image's build stage without Docker: `npm run build` into a temp dir, `npm ci --omit=dev`
// there (the production lockfile, exact versions, no dev dependencies), then the compiled
// all-in-one answers /health and every service's own entry loads, from JavaScript only.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../support/private-servers.ts";

const ROOT = path.resolve(import.meta.dirname, "..", "..");
const work = mkdtempSync(path.join(tmpdir(), "icv-dist-"));
const app = path.join(work, "app");
const children: ChildProcess[] = [];

/** Starts `node <entry>` in the app dir; resolves with its output once a line contains `ready`. */
function start(entry: string, env: Record<string, string>, ready: string): Promise<{ child: ChildProcess; output: () => string }> {
  const { DATABASE_URL: _db, REDIS_URL: _redis, NODE_OPTIONS: _opts, ...inherited } = process.env;
  const child = spawn(process.execPath, [entry], {
    cwd: app,
    env: { ...inherited, NODE_ENV: "production", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let out = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${entry} did not log "${ready}" in time:\n${out}`)), 90_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      if (out.includes(ready)) {
        clearTimeout(timer);
        resolve({ child, output: () => out });
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${entry} exited with ${code} before "${ready}":\n${out}`));
    });
  });
}

function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    child.removeAllListeners("exit");
    child.on("exit", (code) => resolve(code));
    child.kill("SIGTERM");
  });
}

beforeAll(() => {
  execFileSync(process.execPath, ["--import", "tsx", path.join(ROOT, "scripts/build.ts"), app], { cwd: ROOT, stdio: "pipe" });
  execFileSync("npm", ["ci", "--omit=dev", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], { cwd: app, stdio: "pipe" });
  // as the Dockerfile does: what nothing loads at run time goes, and the app below runs without it
  execFileSync(process.execPath, ["--import", "tsx", path.join(ROOT, "scripts/prune-modules.ts"), app], { cwd: ROOT, stdio: "pipe" });
}, 240_000);

/** Apparent size in bytes of everything under dir (what an image layer holds). */
function bytesUnder(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) if (e.isFile()) n += statSync(path.join(e.parentPath, e.name)).size;
  return n;
}

afterAll(async () => {
  await Promise.all(children.map(stop));
  rmSync(work, { recursive: true, force: true });
});

describe("the compiled build with production dependencies only", () => {
  it("has JavaScript and the files read at run time, and no TypeScript tooling", () => {
    expect(existsSync(path.join(app, "scripts/start-all.js"))).toBe(true);
    expect(existsSync(path.join(app, "scripts/start-all.js.map"))).toBe(true);
    expect(existsSync(path.join(app, "services/gateway/src/hosted/page-client.js"))).toBe(true);
    expect(existsSync(path.join(app, "services/proof/migrations/001_init.sql"))).toBe(true);
    for (const dev of ["tsx", "typescript", "vitest", "@bufbuild/buf", "esbuild", "preact"])
      expect(existsSync(path.join(app, "node_modules", dev)), dev).toBe(false);
    const lock = JSON.parse(readFileSync(path.join(app, "package-lock.json"), "utf8")) as { packages: Record<string, { dev?: boolean }> };
    expect(Object.values(lock.packages).some((p) => p.dev)).toBe(false);
  });

  // the image is the distroless Node 24 base (about 150 MB) plus this directory: 250 MB in all
  // leaves it 100 MB (docs/operations.md "Image")
  it("fits the image's budget once pruned: no type declarations, sources or dependency source maps", () => {
    const modules = path.join(app, "node_modules");
    // (@icv/* are links to the app's own workspaces, whose maps stay)
    const unneeded = (f: string) => (/\.d\.[cm]?ts$|\.map$|\.md$/i.test(f) && !/(^|\/)licen[cs]e[^/]*$/i.test(f)) || /^(viem|ox)\/_cjs(\/|$)/.test(f);
    const left = readdirSync(modules, { recursive: true })
      .map(String)
      .filter((f) => !f.startsWith("@icv/") && unneeded(f));
    expect(left).toEqual([]);
    expect(existsSync(path.join(app, "scripts/start-all.js.map"))).toBe(true); // the app's own maps stay
    expect(bytesUnder(app) / 1e6).toBeLessThan(100);
  });

  it("loads the tracing SDK and OTLP exporter it imports only when tracing is on", () => {
    const script = ["@opentelemetry/sdk-trace-node", "@opentelemetry/sdk-trace-base", "@opentelemetry/resources", "@opentelemetry/exporter-trace-otlp-http"]
      .map((m) => `await import(${JSON.stringify(m)});`)
      .join("");
    execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: app, stdio: "pipe" });
  });

  it("starts the all-in-one from dist and answers /health, and serves the hosted page's script, the console and the API reference", async () => {
    const [port, admin, ...grpc] = await Promise.all(Array.from({ length: 8 }, freePort));
    const names = ["proof", "verification", "session", "domain", "webhook", "log"];
    const env: Record<string, string> = { DATA_DIR: path.join(work, "all"), PORT: String(port), ADMIN_PORT: String(admin) };
    names.forEach((n, i) => {
      env[`${n.toUpperCase()}_GRPC_PORT`] = String(grpc[i]);
    });
    const { child } = await start("scripts/start-all.js", env, "ICV is up");
    const health = await fetch(`http://127.0.0.1:${port}/health`);
    expect(health.status).toBe(200);
    const body = (await health.json()) as { status: string; services: Record<string, string> };
    expect(body.status).toBe("healthy");
    for (const n of names) expect(body.services[n]).toBe("up");
    const script = await fetch(`http://127.0.0.1:${port}/hosted/page.js`);
    expect(script.status).toBe(200);
    expect(await script.text()).toBe(readFileSync(path.join(ROOT, "services/gateway/src/hosted/page-client.js"), "utf8"));
    // the tenant console: its page and its hashed assets (the passkey library from node_modules too)
    const consolePage = await fetch(`http://127.0.0.1:${port}/console`);
    expect(consolePage.status).toBe(200);
    const assets = [...(await consolePage.text()).matchAll(/(?:src|href)="(\/console\/assets\/[^"]+)"/g)].map((m) => m[1]);
    // the style and the bundled app (prebuilt by npm run build: no esbuild in the compiled build)
    expect(assets).toHaveLength(2);
    for (const a of assets) expect((await fetch(`http://127.0.0.1:${port}${a}`)).status, a).toBe(200);
    // the API reference: its page and its two scripts (Scalar's bundle, copied by the build: the package is a dev dependency)
    expect(existsSync(path.join(app, "node_modules", "@scalar"))).toBe(false);
    const docs = await fetch(`http://127.0.0.1:${port}/docs`);
    expect(docs.status).toBe(200);
    const scripts = [...(await docs.text()).matchAll(/src="(\/docs\/assets\/[^"]+)"/g)].map((m) => m[1]);
    expect(scripts).toHaveLength(2);
    for (const a of scripts) expect((await fetch(`http://127.0.0.1:${port}${a}`)).status, a).toBe(200);
    expect(await stop(child)).toBe(0);
  }, 120_000);

  // Each service's own entry: with an invalid PORT it loads its whole module graph (ESM links every
  // static import before the entry runs) and then stops at the config check with exit 1. A missing
  // compiled file, asset-free import or unmapped `exports` fails earlier, with ERR_MODULE_NOT_FOUND.
  // (Starting six PGlite-backed processes would take minutes on a busy machine; the all-in-one
  // above runs every service's start code from dist.)
  it("loads each service's own entry (services/<name>/src/main.js)", async () => {
    const { DATABASE_URL: _db, REDIS_URL: _redis, NODE_OPTIONS: _opts, ...inherited } = process.env;
    const run = (name: string) =>
      new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = spawn(process.execPath, [`services/${name}/src/main.js`], {
          cwd: app,
          env: { ...inherited, PORT: "not-a-port", DATA_DIR: path.join(work, name) },
        });
        let out = "";
        child.stdout.on("data", (d: Buffer) => (out += d.toString()));
        child.stderr.on("data", (d: Buffer) => (out += d.toString()));
        child.on("exit", (code) => resolve({ code, out }));
      });
    const names = ["gateway", "verification", "proof", "session", "domain", "webhook", "log"];
    const results = await Promise.all(names.map(run));
    results.forEach(({ code, out }, i) => {
      expect(out, names[i]).not.toContain("ERR_MODULE_NOT_FOUND");
      expect(out, names[i]).toContain("invalid configuration: PORT");
      expect(code, names[i]).toBe(1);
    });
  }, 60_000);
});
