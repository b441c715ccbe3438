// biome-ignore lint/suspicious/noExplicitAny: an OpenAPI document is read member by member without a schema
type Json = Record<string, any>;

const esc = (s: unknown) => String(s ?? "").replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * /docs: Scalar's renderer (its kept bundle and our configuration, both served from this origin by
 * docs-page.ts) over /api/openapi.json, with search, examples and try-it; and the same reference as
 * plain HTML for a reader without scripts (and for anything that reads the page as text).
 */
export function renderDocs(doc: Json, scripts: { scalar: string; config: string }): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(doc.info.title)} — reference</title>
<style>
body{margin:0}
.plain{font:16px/1.5 system-ui,sans-serif;color:#1a1a1a;background:#fff}
.plain main{max-width:60rem;margin:0 auto;padding:1rem}
.plain header{background:#102a43;color:#fff;padding:1rem}.plain header a{color:#d9e8ff}
.plain code,.plain pre{font-family:ui-monospace,monospace;font-size:.9em}.plain pre{background:#f4f5f7;padding:.75rem;overflow:auto;border-radius:4px}
.op{border-top:1px solid #d0d4da;padding:.5rem 0}.m{display:inline-block;min-width:4.5em;font-weight:700}
.get{color:#0b6e2e}.post{color:#0b4f8a}.delete{color:#a11}.put,.patch{color:#7a4b00}.planned{font-size:.75em;background:#eee;padding:0 .4em;border-radius:3px}
.plain nav ul{display:flex;flex-wrap:wrap;gap:.5rem 1rem;list-style:none;padding:0}
</style></head>
<body><div id="reference"></div>
<noscript><div class="plain">${plainReference(doc)}</div></noscript>
<script src="/docs/assets/${esc(scripts.scalar)}"></script>
<script src="/docs/assets/${esc(scripts.config)}"></script>
</body></html>`;
}

/** The reference as plain HTML built from the OpenAPI document (no scripts). */
function plainReference(doc: Json): string {
  const groups = new Map<string, string[]>();
  for (const [path, ops] of Object.entries<Json>(doc.paths)) {
    for (const [method, op] of Object.entries<Json>(ops)) {
      const params = (op.parameters ?? []) as Json[];
      const body = op.requestBody?.content?.["application/json"]?.example;
      const responses = Object.entries<Json>(op.responses)
        .map(([code, r]) => {
          const codes = (r["x-error-codes"] ?? []) as string[];
          const example = Number(code) < 400 ? r.content?.["application/json"]?.example : undefined;
          return `<li><code>${esc(code)}</code> ${esc(r.description)}${codes.length ? ` — error codes: ${codes.map((c) => `<code>${esc(c)}</code>`).join(", ")}` : ""}${
            example !== undefined ? `<details><summary>Example</summary><pre>${esc(JSON.stringify(example, null, 2))}</pre></details>` : ""
          }</li>`;
        })
        .join("");
      const html = `<section class="op" id="${esc(op.operationId)}">
  <h3><span class="m ${esc(method)}">${esc(method.toUpperCase())}</span> <code>${esc(path)}</code>${op["x-icv-planned"] ? ' <span class="planned">planned</span>' : ""}</h3>
  <p>${esc(op.summary)}${op.security && !op.security.length ? " · <em>no API key</em>" : ""}</p>
  ${op.description ? `<p>${esc(op.description)}</p>` : ""}
  ${params.length ? `<h4>Parameters</h4><ul>${params.map((p) => `<li><code>${esc(p.name)}</code> (${esc(p.in)}${p.required ? ", required" : ""}) ${esc(p.schema?.type ?? "")}</li>`).join("")}</ul>` : ""}
  ${body !== undefined ? `<h4>Request example</h4><pre>${esc(JSON.stringify(body, null, 2))}</pre>` : ""}
  <h4>Responses</h4><ul>${responses}</ul>
</section>`;
      const tag = op.tags?.[0] ?? "Other";
      groups.set(tag, [...(groups.get(tag) ?? []), html]);
    }
  }
  const nav = [...groups.keys()].map((t) => `<li><a href="#${esc(t.replace(/\W+/g, "-"))}">${esc(t)}</a></li>`).join("");
  const sections = [...groups.entries()].map(([t, ops]) => `<h2 id="${esc(t.replace(/\W+/g, "-"))}">${esc(t)}</h2>${ops.join("\n")}`).join("\n");
  return `<header><h1>${esc(doc.info.title)}</h1><p>${esc(doc.info.description)} Version ${esc(doc.info.version)}. Machine-readable: <a href="/api/openapi.json">/api/openapi.json</a>.</p></header>
<main><p>Authenticate with <code>Authorization: Bearer pk_test_…</code> (test data, nothing is sent) or <code>pk_live_…</code>. Errors are <code>{"error":{"code","message","request_id"}}</code>.</p>
<nav aria-label="Sections"><ul>${nav}</ul></nav>
${sections}
</main>`;
}

/** GET /: where a developer starts (the reference, the machine-readable document, health, the guides by tag). */
export function renderLanding(doc: Json): string {
  const guides = ((doc.tags ?? []) as Json[])
    .map((t) => `<li><strong>${esc(t.name)}</strong>: ${esc(String(t.description).replace(/ Guide: .*$/, ""))} <code>${esc(t["x-guide"])}</code></li>`)
    .join("");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(doc.info.title)}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;margin:0 auto;max-width:50rem;padding:1rem;color:#1a1a1a}code{font-family:ui-monospace,monospace;font-size:.9em}</style></head>
<body><h1>${esc(doc.info.title)}</h1><p>${esc(doc.info.description)}</p>
<ul>
<li><a href="/docs">API reference</a>: every operation with its examples and error codes</li>
<li><a href="/api/openapi.json">OpenAPI document</a> (<code>/api/openapi.json</code>), for generating clients</li>
<li><a href="/health">Health</a> (<code>/health</code>)</li>
<li><a href="/api/v1">API version</a> (<code>/api/v1</code>)</li>
</ul>
<h2>Guides</h2><p>In the repository's <code>docs/</code> folder, by area:</p><ul>${guides}</ul>
</body></html>`;
}
