// The hosted page's verified domain asset (issue 27): the page's own browser scripts (texts.js,
// domain-view.js) run in a node:vm context with a minimal element builder, so what the card says
// is checked without a browser (the Chromium tests in test/e2e cover the page as a whole).
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import vm from "node:vm";
import { describe, expect, it } from "vitest";

const DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../src/hosted");

interface Node {
  tag: string;
  attrs: Record<string, unknown>;
  children: Node[];
}
const el = (tag: string, attrs: Record<string, unknown> = {}, ...children: (Node | Node[] | null)[]): Node => ({
  tag,
  attrs,
  children: children.flat().filter((c): c is Node => c !== null),
});
const text = (n: Node): string => [n.attrs.text ?? "", ...n.children.map(text)].join(" ").trim();

function load() {
  const window: Record<string, any> = {};
  const ctx = vm.createContext({ window });
  for (const f of ["texts.js", "domain-view.js"]) vm.runInContext(readFileSync(path.join(DIR, f), "utf8"), ctx, { filename: f });
  return (d: Record<string, unknown>) => (window.ICV_DOMAIN_RECHECK(d, { T: window.ICV_TEXTS, el }) as Node[]).map(text).join("\n");
}

describe("a verified domain asset on the hosted page", () => {
  const recheck = load();
  const record = { type: "TXT", name: "_icv-challenge.acme.test", value: "icv-verify=abc" };

  it("says to keep the record, when control was last re-checked, what that check saw, and the next re-check", () => {
    const shown = recheck({
      dns_record: record,
      check_count: 3,
      last_check: {
        passed: false,
        reason: "record_missing",
        summary: "TXT is not on every authoritative server",
        checked_at: "2026-11-26T10:00:00.000Z",
        found: [],
      },
      next_recheck_at: "2026-11-27T10:00:00.000Z",
    });
    expect(shown).toMatch(/Keep the record in place/);
    expect(shown).toMatch(/Control last re-checked /);
    expect(shown).toMatch(/TXT is not on every authoritative server/);
    expect(shown).toMatch(/Next re-check /);
  });

  it("shows nothing for a domain verified by email (nothing stays published)", () => {
    expect(recheck({ check_count: 0 })).toBe("");
  });
});
