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
}

const ROOT = path.resolve(import.meta.dirname, "..", "..");
const SHELL = new Set(["sh", "bash", "shell"]);

export function shellBlocks(file: string): ShellBlock[] {
  const lines = readFileSync(path.join(ROOT, file), "utf8").split("\n");
  const out: ShellBlock[] = [];
  let heading = "";
  for (let i = 0; i < lines.length; i++) {
    const fence = /^(```|~~~)\s*(\S*)/.exec(lines[i]);
    if (!fence) {
      const h = /^#{1,6}\s+(.*)$/.exec(lines[i]);
      if (h) heading = h[1].trim();
      continue;
    }
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !lines[i].startsWith(fence[1]); i++) body.push(lines[i]);
    if (!SHELL.has(fence[2])) continue;
    const marker = /<!--\s*docs-run:\s*skip\s*\((.+)\)\s*-->/.exec(lines[start - 1] ?? "");
    out.push({ where: `${file}:${start + 1}`, heading, code: `${body.join("\n")}\n`, skip: marker?.[1] });
  }
  return out;
}
