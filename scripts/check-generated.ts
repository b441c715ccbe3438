// Fails when packages/contracts/src/gen is not what `buf generate` makes from proto/ today, when the
// verification service's channel table (channels/table.gen.ts) is not what scripts/generate-channels.ts
// makes from vocabulary.proto today, or when @icv/client's generated files (packages/client/src/gen)
// are not what scripts/generate-client.ts makes from the gateway's routes today.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { CHANNEL_TABLE_FILE, channelTableFile } from "./generate-channels.ts";
import { clientFiles } from "./generate-client.ts";

const committed = "packages/contracts/src/gen";
const out = mkdtempSync(path.join(tmpdir(), "icv-gen-"));
const template = JSON.stringify({
  version: "v2",
  plugins: [{ local: "protoc-gen-es", out, opt: ["target=ts", "import_extension=ts"] }],
});

const files = (dir: string, base = dir): string[] =>
  readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    return statSync(p).isDirectory() ? files(p, base) : [path.relative(base, p)];
  });

try {
  execFileSync("npx", ["buf", "generate", "--template", template], { stdio: "inherit" });
  const want = files(out).sort();
  const have = files(committed).sort();
  const stale = [
    ...want.filter((f) => !have.includes(f)).map((f) => `missing ${f}`),
    ...have.filter((f) => !want.includes(f)).map((f) => `extra ${f}`),
    ...want
      .filter((f) => have.includes(f) && readFileSync(path.join(out, f), "utf8") !== readFileSync(path.join(committed, f), "utf8"))
      .map((f) => `stale ${f}`),
  ];
  if (!existsSync(CHANNEL_TABLE_FILE)) stale.push(`missing ${CHANNEL_TABLE_FILE}`);
  else if (readFileSync(CHANNEL_TABLE_FILE, "utf8") !== channelTableFile()) stale.push(`stale ${CHANNEL_TABLE_FILE}`);
  const client = "packages/client/src/gen";
  const made = await clientFiles();
  for (const [name, text] of Object.entries(made)) {
    const file = path.join(client, name);
    if (!existsSync(file)) stale.push(`missing ${file}`);
    else if (readFileSync(file, "utf8") !== text) stale.push(`stale ${file}`);
  }
  if (stale.length) {
    console.error(`generated files are out of date (run npm run generate and commit):\n  ${stale.join("\n  ")}`);
    process.exit(1);
  }
  console.log(`generated contracts are up to date (${want.length} files), the channel table, and the client's ${Object.keys(made).length} files`);
} finally {
  rmSync(out, { recursive: true, force: true });
}
// the gateway's clients keep handles open
process.exit(0);
