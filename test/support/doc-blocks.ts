// The shell blocks of the guides, as a reader copies them: fenced ```sh/```bash/```shell blocks of a
// Markdown file, with the heading they stand under. A block the docs tests cannot run here (it needs
// another host, a provider, a container engine) carries a marker on the line before its fence:
// `<!-- docs-run: skip (why) -->`; the tests honour it and say why.
import { readFileSync } from "node:fs";
import path from "node:path";

export interface ShellBlock {
  /** `docs/walkthrough.md:42`: the file and the line of the opening fence. */
  where: string;
  heading: string;
  code: string;
  /** The reason of a `docs-run: skip` marker. */
  skip?: string;
  /** Its sample output: the ```json (or plain) block that follows it with nothing but blank lines between. */
  sample?: string;
}

const ROOT = path.resolve(import.meta.dirname, "..", "..");
const SHELL = new Set(["sh", "bash", "shell"]);

export function shellBlocks(file: string): ShellBlock[] {
  const lines = readFileSync(path.join(ROOT, file), "utf8").split("\n");
  const out: ShellBlock[] = [];
  let heading = "";
  for (let i = 0; i < lines.length; i++) {
    // a fence may be indented (a block inside a list item): its lines lose that indentation
    const fence = /^(\s*)(```|~~~)\s*(\S*)/.exec(lines[i]);
    if (!fence) {
      const h = /^#{1,6}\s+(.*)$/.exec(lines[i]);
      if (h) heading = h[1].trim();
      continue;
    }
    const [, indent, mark, lang] = fence;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !lines[i].trimStart().startsWith(mark); i++)
      body.push(lines[i].startsWith(indent) ? lines[i].slice(indent.length) : lines[i]);
    if (!SHELL.has(lang)) continue;
    const marker = /<!--\s*docs-run:\s*skip\s*\((.+)\)\s*-->/.exec(lines[start - 1] ?? "");
    let next = i + 1;
    while (lines[next]?.trim() === "") next++;
    const sampleFence = /^\s*(```|~~~)\s*(json|text)?\s*$/.exec(lines[next] ?? "");
    let sample: string | undefined;
    if (sampleFence) {
      const end = lines.findIndex((l, n) => n > next && l.trimStart().startsWith(sampleFence[1]));
      if (end > next) sample = lines.slice(next + 1, end).join("\n");
    }
    out.push({ where: `${file}:${start + 1}`, heading, code: `${body.join("\n")}\n`, skip: marker?.[1], sample });
  }
  return out;
}

/**
 * The environment of a fresh shell a reader opens to run a guide's block: the machine's tools and
 * Node, nothing of this project's PATH (node_modules/.bin), npm's or vitest's; `extra` on top.
 */
export function shellEnv(extra: Record<string, string>): Record<string, string> {
  const { DATABASE_URL: _d, REDIS_URL: _r, NODE_OPTIONS: _o, ...inherited } = process.env as Record<string, string>;
  for (const k of Object.keys(inherited)) if (k.startsWith("npm_") || k.startsWith("VITEST") || k === "INIT_CWD") delete inherited[k];
  const PATH = (inherited.PATH ?? "").split(path.delimiter).filter((d) => !d.includes(`${path.sep}node_modules`));
  return { ...inherited, PATH: PATH.join(path.delimiter), ...extra };
}
