// INTERNAL_CLIENTS_FILE: what a bad file is told (the line and the reason), JSON and YAML alike,
// and the start refusing it (ConfigError) while a reload keeps the clients in use.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError } from "../src/config.ts";
import { acquireInternalClients, InternalClientsError, parseInternalClients } from "../src/internal-clients.ts";
import { createLogger } from "../src/logger.ts";
import { lineCollector } from "./support/log-lines.ts";

const VS = "icv.verification.v1.VerificationService";
const dir = mkdtempSync(path.join(tmpdir(), "icv-clients-unit-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const problem = (text: string) => {
  try {
    parseInternalClients(text, "clients.yaml");
  } catch (e) {
    if (e instanceof InternalClientsError) return { line: e.line, reason: e.reason };
    throw e;
  }
  throw new Error("parsed");
};

describe("the client file", () => {
  it("reads YAML and JSON, with wildcards and a rate", () => {
    const yaml = `clients:\n  - name: billing\n    rate_per_minute: 30\n    allow: [${VS}/ExportVerifications, icv.proof.v1.ProofService/*]\n`;
    expect(parseInternalClients(yaml, "f.yaml")).toEqual([
      { name: "billing", ratePerMinute: 30, allow: [`${VS}/ExportVerifications`, "icv.proof.v1.ProofService/*"] },
    ]);
    const json = JSON.stringify({ clients: [{ name: "risk", allow: [`${VS}/GetVerification`] }] }, null, 2);
    expect(parseInternalClients(json, "f.json")).toEqual([{ name: "risk", allow: [`${VS}/GetVerification`], ratePerMinute: undefined }]);
  });

  it("names the line and the reason of each mistake", () => {
    const head = "clients:\n  - name: billing\n    allow:\n";
    expect(problem(`${head}      - ${VS}/Nope\n`)).toEqual({ line: 4, reason: `client "billing": ${VS} has no method Nope` });
    expect(problem(`${head}      - icv.nothing.v1.Thing/*\n`)).toMatchObject({ line: 4, reason: expect.stringContaining("no service icv.nothing.v1.Thing") });
    expect(problem(`${head}      - ${VS}\n`)).toMatchObject({ line: 4, reason: expect.stringContaining("is not package.Service/Method") });
    expect(problem(`clients:\n  - name: gateway\n    allow: [${VS}/GetVerification]\n`)).toEqual({
      line: 2,
      reason: `name "gateway" is a service's name; a client must have its own`,
    });
    expect(problem(`clients:\n  - name: Billing_Team\n    allow: [${VS}/GetVerification]\n`)).toMatchObject({
      line: 2,
      reason: expect.stringContaining("DNS label"),
    });
    const twice = `clients:\n  - name: a\n    allow: [${VS}/GetVerification]\n  - name: a\n    allow: [${VS}/GetVerification]\n`;
    expect(problem(twice)).toEqual({ line: 4, reason: 'client "a" is listed twice' });
    expect(problem(`clients:\n  - name: a\n    allows: [${VS}/GetVerification]\n`)).toMatchObject({
      line: 3,
      reason: expect.stringContaining('unknown key "allows"'),
    });
    expect(problem(`clients:\n  - name: a\n    allow: []\n`)).toMatchObject({ line: 3, reason: expect.stringContaining("non-empty list") });
    expect(problem(`clients:\n  - name: a\n    rate_per_minute: 0\n    allow: [${VS}/GetVerification]\n`)).toMatchObject({ line: 3 });
    expect(problem(`clients:\n  - name: a\n    allow: [${VS}/GetVerification\n`).line).toBeGreaterThanOrEqual(3);
    expect(problem('{"clients": [\n  {"name": "a",\n   "allow": ["nope"]}\n]}')).toMatchObject({ line: 3, reason: expect.stringContaining('"nope" is not') });
    expect(problem("clients: {}\n")).toMatchObject({ line: 1, reason: "`clients` must be a list" });
  });

  it("a bad file refuses the start (ConfigError with file and line); a bad reload is logged and the clients in use stay", async () => {
    const file = path.join(dir, "clients.yaml");
    writeFileSync(file, `clients:\n  - name: billing\n    allow:\n      - ${VS}/Nope\n`);
    const logs = lineCollector();
    const logger = createLogger({ level: "info", destination: logs });
    const config = { INTERNAL_CLIENTS_FILE: file, INTERNAL_CLIENT_RATE_PER_MINUTE: 10 };
    expect(() => acquireInternalClients(config, logger)).toThrow(ConfigError);
    expect(() => acquireInternalClients(config, logger)).toThrow(
      `invalid configuration: INTERNAL_CLIENTS_FILE ${file}:4: client "billing": ${VS} has no method Nope`,
    );
    writeFileSync(file, `clients:\n  - name: billing\n    allow:\n      - ${VS}/GetVerification\n`);
    const held = acquireInternalClients(config, logger)!;
    expect(held.clients.allowed(["billing"], VS, "GetVerification")).toBe("billing");
    writeFileSync(file, "clients:\n  - name: billing\n");
    expect(held.clients.reload()).toBe(false);
    expect(held.clients.allowed(["billing"], VS, "GetVerification")).toBe("billing");
    expect(held.clients.allowed(["billing"], VS, "ListVerifications")).toBeUndefined();
    expect(logs.records().at(-1)).toMatchObject({ file, line: 2, reason: expect.stringContaining("allow must be a non-empty list") });
    await held.release();
    expect(process.listenerCount("SIGHUP")).toBe(0);
  });
});
