// Every relative link in README.md and docs/*.md must resolve: the file exists and, for a link
// into a Markdown file, the #anchor names one of its headings (GitHub's heading ids).
// Links that leave the repository (the shared spec folder beside it) and absolute URLs are not
// checked. The README stays a front door (at most 250 lines) and links every docs page.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const DOCS = path.join(ROOT, "docs");

const pages = (): string[] => [
  "README.md",
  ...readdirSync(DOCS)
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => `docs/${f}`),
];

/** The text outside fenced code blocks and inline code spans. */
function prose(md: string): string {
  return md.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "").replace(/`[^`\n]*`/g, "");
}

/** GitHub's heading ids: lower case, punctuation dropped, spaces to hyphens, -1, -2 … on repeats. */
function anchors(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of md.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "").matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = m[1]
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

function links(md: string): string[] {
  return [...prose(md).matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]);
}

function broken(page: string): string[] {
  const text = readFileSync(path.join(ROOT, page), "utf8");
  const out: string[] = [];
  for (const link of links(text)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // http:, https:, mailto:
    const [rawPath, anchor] = link.split("#", 2) as [string, string | undefined];
    const target = rawPath === "" ? path.join(ROOT, page) : path.resolve(path.dirname(path.join(ROOT, page)), decodeURI(rawPath));
    const rel = path.relative(ROOT, target).split(path.sep).join("/");
    if (rel.startsWith("..")) continue; // outside the repository (the shared spec folder)
    if (!existsSync(target)) {
      out.push(`${link}: no file ${rel}`);
      continue;
    }
    if (anchor && target.endsWith(".md") && statSync(target).isFile() && !anchors(readFileSync(target, "utf8")).has(anchor)) {
      out.push(`${link}: no heading #${anchor} in ${rel}`);
    }
  }
  return out;
}

describe("documentation links", () => {
  it("finds the pages", () => {
    expect(pages()).toContain("docs/README.md");
    expect(pages().length).toBeGreaterThan(5);
  });

  for (const page of pages()) {
    it(`${page}: every relative link resolves`, () => {
      expect(broken(page)).toEqual([]);
    });
  }

  it("computes GitHub's heading ids", () => {
    expect([...anchors("# Verified users (B2B)\n## Walkthrough: a phone `test` key\n## Events\n### Events\n")]).toEqual([
      "verified-users-b2b",
      "walkthrough-a-phone-test-key",
      "events",
      "events-1",
    ]);
  });

  it("catches a broken link and a broken anchor", () => {
    expect(links("[a](docs/x.md#y) `[b](c.md)` [d](https://e.f)")).toEqual(["docs/x.md#y", "https://e.f"]);
  });

  it("README.md stays a front door of at most 250 lines", () => {
    expect(readFileSync(path.join(ROOT, "README.md"), "utf8").trimEnd().split("\n").length).toBeLessThanOrEqual(250);
  });

  it("README.md and the docs index link every docs page", () => {
    const docs = pages().filter((p) => p.startsWith("docs/") && p !== "docs/README.md");
    const linked = (page: string) =>
      new Set(
        links(readFileSync(path.join(ROOT, page), "utf8")).map((l) =>
          path
            .relative(ROOT, path.resolve(path.dirname(path.join(ROOT, page)), l.split("#")[0]))
            .split(path.sep)
            .join("/"),
        ),
      );
    const fromReadme = linked("README.md");
    const fromIndex = linked("docs/README.md");
    expect(docs.filter((d) => !fromReadme.has(d))).toEqual([]);
    expect(docs.filter((d) => !fromIndex.has(d))).toEqual([]);
    expect(fromReadme.has("docs/README.md")).toBe(true);
  });
});
