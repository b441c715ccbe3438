// The transparency log as a relying party and a domain owner see it: every proof issued or
// revoked is in a signed checkpoint within 5 s, and the test checks that with its own RFC 9162
// verifier (written here, not shared with the service), the checkpoint's Ed25519 signature
// against the published key, the consistency between two checkpoints, the tiles, and that a log
// service that was down when a proof was issued logs it once after its restart.
import { createHash, createPublicKey, verify } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";
import { expectError, waitFor } from "../support/expect-error.ts";

// polls of the inclusion endpoint would meet the default 100 requests a minute
const stack = useStack({ RATE_LIMIT_PER_MINUTE: "100000" });
const t = useTenant(stack, "Log");
const other = useTenant(stack, "Someone else");
let c: ReturnType<typeof api>;
let pub: ReturnType<typeof api>;

beforeAll(() => {
  c = api(stack.url, t.testKey);
  pub = api(stack.url);
});

// ---- the test's own RFC 9162 verifier ----------------------------------------------------------
const sha = (...parts: Uint8Array[]) => {
  const h = createHash("sha256");
  for (const p of parts) h.update(p);
  return h.digest();
};
const leaf = (entry: Uint8Array) => sha(Buffer.from([0]), entry);
const node = (l: Uint8Array, r: Uint8Array) => sha(Buffer.from([1]), l, r);

/** RFC 9162 2.1.3.2: the root an audit path leads to, or undefined when the path is malformed. */
function rootFromInclusion(index: number, size: number, leafHash: Buffer, path: Buffer[]): Buffer | undefined {
  if (index >= size) return undefined;
  let fn = index;
  let sn = size - 1;
  let r = leafHash;
  for (const p of path) {
    if (sn === 0) return undefined;
    if (fn % 2 === 1 || fn === sn) {
      r = node(p, r);
      if (fn % 2 === 0)
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
    } else r = node(r, p);
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : undefined;
}

/** RFC 9162 2.1.4.2: whether `path` proves the tree of (second, secondRoot) extends the one of (first, firstRoot). */
function verifyConsistency(first: number, second: number, firstRoot: Buffer, secondRoot: Buffer, path: Buffer[]): boolean {
  if (first === second) return path.length === 0 && firstRoot.equals(secondRoot);
  if (first < 1 || first > second || (path.length === 0 && (first & (first - 1)) !== 0)) return false;
  const p = (first & (first - 1)) === 0 ? [firstRoot, ...path] : path;
  let fn = first - 1;
  let sn = second - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr = p[0];
  let sr = p[0];
  for (const x of p.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = node(x, fr);
      sr = node(x, sr);
      if (fn % 2 === 0)
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
    } else sr = node(sr, x);
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return fr.equals(firstRoot) && sr.equals(secondRoot) && sn === 0;
}

/** A C2SP checkpoint, its signature checked against a C2SP vkey (Ed25519). */
function openCheckpoint(note: string, vkey: string): { origin: string; size: number; root: Buffer } {
  // name+hex id+base64 key (base64 may hold "+" too)
  const [, name, idHex, keyB64] = /^([^+]+)\+([0-9a-f]{8})\+(.+)$/.exec(vkey.trim())!;
  const key = Buffer.from(keyB64, "base64");
  expect(key[0]).toBe(0x01); // Ed25519
  const raw = key.subarray(1);
  const keyId = sha(Buffer.from(`${name}\n`), Buffer.from([1]), raw).subarray(0, 4);
  expect(keyId.toString("hex")).toBe(idHex);
  const split = note.indexOf("\n\n");
  const body = note.slice(0, split + 1);
  const sigLines = note
    .slice(split + 2)
    .split("\n")
    .filter(Boolean);
  const mine = sigLines.map((l) => /^\u2014 (\S+) (\S+)$/.exec(l)).find((m) => m?.[1] === name);
  expect(mine, "a signature line by the log's key").toBeTruthy();
  const sig = Buffer.from(mine![2], "base64");
  expect(sig.subarray(0, 4).equals(keyId)).toBe(true);
  const spki = Buffer.concat([Buffer.from("302a300506032b6570032100", "hex"), raw]);
  const ok = verify(null, Buffer.from(body), createPublicKey({ key: spki, format: "der", type: "spki" }), sig.subarray(4));
  expect(ok, "the checkpoint's signature").toBe(true);
  const [origin, size, root] = body.split("\n");
  expect(origin).toBe(name);
  return { origin, size: Number(size), root: Buffer.from(root, "base64") };
}

// ---- helpers -----------------------------------------------------------------------------------
let n = 0;
async function testProof(identifier = `+3706920${String(n++).padStart(4, "0")}`, key = t.testKey) {
  const k = api(stack.url, key);
  const v = await k.post("/api/v1/verifications", { type: "phone", channel: "telegram", identifier });
  expect(v.status).toBe(201);
  const done = await k.post(`/api/v1/verifications/${v.body.id}/test-verify`);
  expect(done.status).toBe(200);
  return { id: v.body.id as string, token: done.body.proof_token as string, identifier };
}

async function logKey(env = "test") {
  const r = await fetch(`${stack.url}/.well-known/icv-log-key?env=${env}`);
  expect(r.status).toBe(200);
  return r.text();
}

async function checkpoint(env = "test") {
  const r = await fetch(`${stack.url}/api/v1/log/checkpoint?env=${env}`);
  expect(r.status).toBe(200);
  expect(r.headers.get("content-type")).toMatch(/^text\/plain/);
  return openCheckpoint(await r.text(), await logKey(env));
}

/** The proof's inclusion answer once it is logged (within 5 s of issuance; a little more on a busy machine). */
async function inclusionOf(id: string, kind = "issued", key = t.testKey) {
  const r = await waitFor(
    async () => {
      const x = await api(stack.url, key).get(`/api/v1/proofs/${id}/inclusion?kind=${kind}`);
      return x.status === 200 ? x : undefined;
    },
    8_000,
    100,
  );
  expect(r, `${id} logged`).toBeTruthy();
  return r!.body;
}

// ---- the tests ---------------------------------------------------------------------------------
describe("the transparency log", () => {
  it("publishes a signed checkpoint per environment, each with its own origin and key", async () => {
    const live = await checkpoint("live");
    const test = await checkpoint("test");
    expect(test.origin).toBe(`${live.origin}/test`);
    expect(await logKey("live")).not.toBe(await logKey("test"));
    // a test checkpoint never verifies with the live key
    const note = await (await fetch(`${stack.url}/api/v1/log/checkpoint?env=test`)).text();
    const liveKey = await logKey("live");
    expect(() => openCheckpoint(note, liveKey)).toThrow();
  });

  it("logs an issued proof within 5 s: the entry names it without the phone, and its path leads to the signed root", async () => {
    const p = await testProof();
    const started = Date.now();
    const inc = await inclusionOf(p.id);
    expect(Date.now() - started).toBeLessThan(8_000);
    const entry = Buffer.from(inc.entry, "base64");
    const fields = JSON.parse(entry.toString("utf8"));
    expect(Object.keys(fields)).toEqual(["kind", "proof_id", "token_sha256", "env", "type", "channel", "method", "logged_at", "subject"]);
    expect(fields).toMatchObject({ kind: "issued", proof_id: p.id, env: "test", type: "phone", channel: "telegram" });
    expect(fields.token_sha256).toBe(createHash("sha256").update(p.token).digest("hex"));
    // the salted hash, never the phone number (in any spelling)
    expect(fields.subject).toMatch(/^[0-9a-f]{64}$/);
    expect(entry.toString()).not.toContain(p.identifier.slice(1));
    const cp = openCheckpoint(inc.checkpoint, await logKey("test"));
    const root = rootFromInclusion(
      inc.leaf_index,
      cp.size,
      leaf(entry),
      inc.proof.map((x: string) => Buffer.from(x, "base64")),
    );
    expect(root?.equals(cp.root)).toBe(true);
    // a tampered entry does not lead to the root
    const forged = Buffer.from(entry.toString().replace('"issued"', '"revoked"'));
    expect(
      rootFromInclusion(
        inc.leaf_index,
        cp.size,
        leaf(forged),
        inc.proof.map((x: string) => Buffer.from(x, "base64")),
      )?.equals(cp.root),
    ).toBe(false);
    // the proof's status answer says where it is logged
    const st = await c.get(`/api/v1/proofs/${p.id}/status`);
    expect(st.body.log).toEqual({ leaf_index: inc.leaf_index, checkpoint_size: expect.any(Number) });
    expect(st.body.log.checkpoint_size).toBeGreaterThan(inc.leaf_index);
  });

  it("logs a revocation as its own entry", async () => {
    const p = await testProof();
    await inclusionOf(p.id);
    expect((await c.post(`/api/v1/proofs/${p.id}/revoke`, { reason: "fraud" })).status).toBe(200);
    const inc = await inclusionOf(p.id, "revoked");
    const entry = Buffer.from(inc.entry, "base64");
    expect(JSON.parse(entry.toString())).toMatchObject({ kind: "revoked", proof_id: p.id });
    const cp = openCheckpoint(inc.checkpoint, await logKey("test"));
    expect(
      rootFromInclusion(
        inc.leaf_index,
        cp.size,
        leaf(entry),
        inc.proof.map((x: string) => Buffer.from(x, "base64")),
      )?.equals(cp.root),
    ).toBe(true);
  });

  it("proves each checkpoint consistent with every earlier one", async () => {
    const before = await checkpoint();
    const ps = await Promise.all([testProof(), testProof(), testProof()]);
    await Promise.all(ps.map((p) => inclusionOf(p.id)));
    const after = await checkpoint();
    expect(after.size).toBeGreaterThanOrEqual(before.size + 3);
    for (const first of [1, 2, 3, before.size, after.size - 1].filter((x) => x >= 1 && x <= after.size)) {
      const r = await pub.get(`/api/v1/log/consistency?first=${first}&second=${after.size}&env=test`);
      expect(r.status).toBe(200);
      const path = r.body.proof.map((x: string) => Buffer.from(x, "base64"));
      // the first tree's root, from its entries (the test hashes them itself)
      const es = (await pub.get(`/api/v1/log/entries?start=0&end=${first}&env=test`)).body.entries.map((x: string) => Buffer.from(x, "base64"));
      const firstRoot = mth(es.map(leaf));
      expect(verifyConsistency(first, after.size, firstRoot, after.root, path), `consistency ${first} -> ${after.size}`).toBe(true);
      // and not with another root
      expect(verifyConsistency(first, after.size, sha(Buffer.from("other")), after.root, path)).toBe(false);
    }
  });

  it("serves C2SP tiles: the level-0 tile holds the leaf hashes and the entry bundle the entries", async () => {
    const cp = await checkpoint();
    const w = Math.min(cp.size, 255);
    const tile = await fetch(`${stack.url}/api/v1/log/tile/0/000.p/${w}?env=test`);
    expect(tile.status).toBe(200);
    const hashes = Buffer.from(await tile.arrayBuffer());
    const es = (await pub.get(`/api/v1/log/entries?start=0&end=${w}&env=test`)).body.entries.map((x: string) => Buffer.from(x, "base64"));
    expect(hashes.length).toBe(32 * w);
    for (let i = 0; i < w; i++) expect(hashes.subarray(32 * i, 32 * i + 32).equals(leaf(es[i]))).toBe(true);
    const bundle = Buffer.from(await (await fetch(`${stack.url}/api/v1/log/tile/entries/000.p/${w}?env=test`)).arrayBuffer());
    let at = 0;
    for (let i = 0; i < w; i++) {
      const len = bundle.readUInt16BE(at);
      expect(bundle.subarray(at + 2, at + 2 + len).equals(es[i])).toBe(true);
      at += 2 + len;
    }
    expect(at).toBe(bundle.length);
    // the test log's own tlog-tiles prefix answers the same
    const prefixed = Buffer.from(await (await fetch(`${stack.url}/api/v1/log/test/tile/0/000.p/${w}`)).arrayBuffer());
    expect(prefixed.subarray(0, 32 * w).equals(hashes)).toBe(true);
    expect(openCheckpoint(await (await fetch(`${stack.url}/api/v1/log/test/checkpoint`)).text(), await logKey("test")).size).toBeGreaterThanOrEqual(cp.size);
    expect((await fetch(`${stack.url}/api/v1/log/tile/0/000?env=test`)).status).toBe(404); // not full yet
    expect((await fetch(`${stack.url}/api/v1/log/tile/0/000.p/${w + 1}?env=test`)).status).toBe(404); // beyond the tree
  });

  it("names a domain in clear, and a public profile shows it as logged with a link to its inclusion proof", async () => {
    const v = await c.post("/api/v1/verifications", { type: "domain", channel: "dns", identifier: "Shop-Log.Example.com" });
    expect(v.status).toBe(201);
    expect((await c.post(`/api/v1/verifications/${v.body.id}/test-verify`)).status).toBe(200);
    const inc = await inclusionOf(v.body.id);
    expect(JSON.parse(Buffer.from(inc.entry, "base64").toString())).toMatchObject({ type: "domain", subject: "shop-log.example.com" });
    const prof = await c.post("/api/v1/me/profiles", { display_name: "Shop", is_public: true, proofs: [{ verification_id: v.body.id, label: "Site" }] });
    expect(prof.status, prof.text).toBe(201);
    const json = await pub.get(`/p/${prof.body.id}.json`);
    expect(json.body.proofs[0].log_index).toBe(inc.leaf_index);
    const html = await (await fetch(`${stack.url}/p/${prof.body.id}`)).text();
    const href = /<a class="logged" href="([^"]+)">logged<\/a>/.exec(html)?.[1].replaceAll("&amp;", "&");
    expect(href).toBe(`/api/v1/log/proof?leaf_index=${inc.leaf_index}&env=test`);
    const proof = await pub.get(href!);
    expect(proof.status).toBe(200);
    const cp = openCheckpoint(proof.body.checkpoint, await logKey("test"));
    const entry = Buffer.from(proof.body.entry, "base64");
    expect(entry.equals(Buffer.from(inc.entry, "base64"))).toBe(true);
    expect(
      rootFromInclusion(
        proof.body.leaf_index,
        cp.size,
        leaf(entry),
        proof.body.proof.map((x: string) => Buffer.from(x, "base64")),
      )?.equals(cp.root),
    ).toBe(true);
    expectError(await pub.get(`/api/v1/log/proof?leaf_index=${cp.size + 5}&env=test`), 404, "not_found");
  });

  it("refuses bad input: an unknown or another tenant's proof is 404, a bad range validation_error", async () => {
    expectError(await c.get("/api/v1/proofs/ver_01J00000000000000000000099/inclusion"), 404, "not_found");
    const p = await testProof();
    await inclusionOf(p.id);
    expectError(await api(stack.url, other.testKey).get(`/api/v1/proofs/${p.id}/inclusion`), 404, "not_found");
    const { size } = await checkpoint();
    expectError(await pub.get(`/api/v1/log/consistency?first=3&second=2&env=test`), 400, "validation_error");
    expectError(await pub.get(`/api/v1/log/consistency?first=1&second=${size + 1}&env=test`), 400, "validation_error");
    expectError(await pub.get(`/api/v1/log/entries?start=0&end=1001&env=test`), 400, "validation_error");
    expectError(await pub.get(`/api/v1/log/entries?start=0&end=${size + 1}&env=test`), 400, "validation_error");
    expectError(await pub.get(`/api/v1/log/entries?start=2&end=1&env=test`), 400, "validation_error");
  });

  it("logs once a proof issued while the log service was down (killed between the issuance and its entry)", async () => {
    let p: Awaited<ReturnType<typeof testProof>> | undefined;
    await stack.restart("log", async () => {
      p = await testProof();
      expect((await c.post(`/api/v1/proofs/${p.id}/revoke`, { reason: "other" })).status).toBe(200);
    });
    const inc = await inclusionOf(p!.id);
    await inclusionOf(p!.id, "revoked");
    const { size } = await checkpoint();
    const all: string[] = [];
    for (let s = 0; s < size; s += 1000) all.push(...(await pub.get(`/api/v1/log/entries?start=${s}&end=${Math.min(size, s + 1000)}&env=test`)).body.entries);
    const mine = all.map((x) => JSON.parse(Buffer.from(x, "base64").toString())).filter((e) => e.proof_id === p!.id);
    expect(mine.map((e) => e.kind).sort()).toEqual(["issued", "revoked"]);
    expect(inc.leaf_index).toBeLessThan(size);
  });
});

/** RFC 9162 MTH over leaf hashes (the test's own, recursive as the RFC defines it). */
function mth(leaves: Buffer[]): Buffer {
  if (leaves.length === 0) return sha();
  if (leaves.length === 1) return leaves[0];
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  return node(mth(leaves.slice(0, k)), mth(leaves.slice(k)));
}
