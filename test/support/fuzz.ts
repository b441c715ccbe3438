// Generators of malformed requests for the property-based edge suite (test/e2e/fuzz.test.ts):
// bodies, queries, paths, headers and encodings, derived from the OpenAPI document so that a new
// route is fuzzed without anyone listing it.
import { gzipSync } from "node:zlib";
import fc from "fast-check";

type Json = Record<string, any>;

export interface Operation {
  method: string;
  path: string;
  auth: "key" | "public";
  pathParams: string[];
  query: { name: string; schema: Json }[];
  body?: Json;
}

export interface FuzzRequest {
  op: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

/** Values the suite knows: real ids and keys made before the run, so some requests get deep. */
export interface Pool {
  ids: string[];
  keys: string[];
  tokens: string[];
}

/** Every operation of the OpenAPI document. */
export function operations(doc: Json): Operation[] {
  const out: Operation[] = [];
  for (const [path, ops] of Object.entries<Json>(doc.paths)) {
    for (const [method, op] of Object.entries<Json>(ops)) {
      const params: Json[] = op.parameters ?? [];
      out.push({
        method: method.toUpperCase(),
        path,
        auth: Array.isArray(op.security) && op.security.length === 0 ? "public" : "key",
        pathParams: params.filter((p) => p.in === "path").map((p) => p.name),
        query: params.filter((p) => p.in === "query").map((p) => ({ name: p.name, schema: p.schema ?? {} })),
        body: op.requestBody?.content?.["application/json"]?.schema,
      });
    }
  }
  return out;
}

const ULID_CHARS = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const ulid = fc.string({ unit: fc.constantFrom(...ULID_CHARS), minLength: 26, maxLength: 26 });
const PREFIXES = ["ver", "vreq", "sess", "auth", "whd", "ten", "key"];

/** Strings an attacker tries: any code point, NULs, lone surrogates, escapes, long runs, odd dates. */
export const nastyString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: "binary", maxLength: 24 }),
  fc.string({
    unit: fc.constantFrom("\u0000", "\ud800", "\udfff", "\ufeff", "\u202e", "😀", "%", "%00", "\\", '"', "'", "<", "../", "\r\n", "a", "Z", "0", " ", "\u00ff"),
    maxLength: 16,
  }),
  fc.constantFrom(
    "0000-01-01T00:00:00Z",
    "1969-12-31T23:59:59Z",
    "9999-12-31T23:59:59Z",
    "+275760-09-13T00:00:00.000Z",
    "2024-02-30T25:61:00Z",
    "-1",
    "1e400",
    "NaN",
    "null",
    "true",
    "[]",
    "{}",
    "__proto__",
    "constructor",
    "ver_%00",
    "http://127.0.0.1/",
    "https://[::127.0.0.1]/",
    "+37069199199",
    "a@example.com",
    "example.com",
    "telegram",
    "sms",
    "email",
    "ethereum",
    "0x0000000000000000000000000000000000000000",
  ),
  fc.integer({ min: 256, max: 12_000 }).map((n) => "a".repeat(n)),
  fc.tuple(fc.constantFrom(...PREFIXES), ulid).map(([p, u]) => `${p}_${u}`),
);

const nest = (depth: number): unknown => (depth === 0 ? 1 : { n: nest(depth - 1) });
const nastyNumber = fc.oneof(fc.double(), fc.integer(), fc.constantFrom(1e308, -1e308, 2 ** 53, 2 ** 64, -0, 0.1, 31_536_001, -1));

/** JSON values that break shape limits: deep, wide, long, odd numbers. */
export const nastyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: nastyString },
  // an ordinary string but for one NUL or lone surrogate: passes length checks, reaches storage
  {
    weight: 4,
    arbitrary: fc
      .tuple(fc.string({ minLength: 1, maxLength: 8 }), fc.constantFrom("\u0000", "\ud800", "\udfff"), fc.string({ maxLength: 8 }))
      .map(([a, b, c]) => a + b + c),
  },
  { weight: 2, arbitrary: nastyNumber },
  fc.boolean(),
  fc.constant(null),
  fc.integer({ min: 8, max: 80 }).map(nest),
  fc.integer({ min: 40, max: 300 }).map((n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]))),
  fc.array(fc.integer(), { maxLength: 300 }),
  fc.dictionary(nastyString, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }),
);

/** Resolves a `$ref` of the document. */
const deref = (doc: Json, s: Json): Json => (s?.$ref ? doc.components.schemas[String(s.$ref).split("/").pop()!] : (s ?? {}));

/** A plausible value for a schema (so requests reach past the first check), or a nasty one. */
function valueFor(doc: Json, schema: Json, pool: Pool, depth = 0): fc.Arbitrary<unknown> {
  const s = deref(doc, schema);
  let good: fc.Arbitrary<unknown>;
  if (s.enum) good = fc.constantFrom(...s.enum);
  else if (s.type === "integer" || s.type === "number") good = fc.integer({ min: s.minimum ?? 0, max: s.maximum ?? 1000 });
  else if (s.type === "boolean") good = fc.boolean();
  else if (s.type === "array") good = fc.array(valueFor(doc, s.items ?? {}, pool, depth + 1), { maxLength: 3 });
  else if (s.type === "object" && s.properties && depth < 3) good = objectFor(doc, s, pool, depth + 1);
  else if (s.type === "object") good = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
  else
    good = fc.oneof(
      fc.string({ maxLength: 12 }),
      fc.constantFrom(...pool.ids, "+37069199199", "a@example.com", "telegram", "email", "phone", "ABC123", "2024-01-01T00:00:00Z", "u1", "r1"),
    );
  return fc.oneof({ weight: 6, arbitrary: good }, { weight: 1, arbitrary: nastyValue });
}

function objectFor(doc: Json, schema: Json, pool: Pool, depth = 0): fc.Arbitrary<Json> {
  const s = deref(doc, schema);
  const props = Object.entries<Json>(s.properties ?? {});
  const record = Object.fromEntries(props.map(([k, v]) => [k, valueFor(doc, v, pool, depth)]));
  const addExtra = fc.oneof({ weight: 4, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) });
  return fc
    .tuple(fc.record(record, { requiredKeys: [] }), fc.dictionary(nastyString, nastyValue, { maxKeys: 2 }), addExtra)
    .map(([o, extra, addExtra]) => (addExtra ? { ...o, ...extra } : o));
}

/** Percent-encodes the UTF-8 bytes of s (lone surrogates become U+FFFD, as any client's would). */
const pct = (s: string) =>
  [...Buffer.from(s, "utf8")]
    .map((b) => (/[A-Za-z0-9_.~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, "0")}`))
    .join("");
const BAD_ENCODINGS = ["%zz", "%", "%4", "%C0%AF", "%ED%A0%80", "%00", "%FF%FE", "%E0%A4", "..", "%2e%2e", "a%2Fb", "%25"];
const encoded = (pool: Pool) =>
  fc.oneof(
    { weight: 3, arbitrary: nastyString.map(pct) },
    { weight: 4, arbitrary: fc.constantFrom(...pool.ids) },
    { weight: 1, arbitrary: fc.constantFrom(...BAD_ENCODINGS) },
    { weight: 1, arbitrary: fc.integer({ min: -5, max: 200 }).map(String) },
  );

/**
 * Valid bodies of the known request schemas (by component name). One field at a time is then
 * replaced by a nasty value, so the bad value travels as deep as a good request would. A schema
 * without an example is fuzzed from its shape alone.
 */
const EXAMPLES: Record<string, (pool: Pool) => Json> = {
  CreateVerification: () => ({
    type: "phone",
    channel: "telegram",
    identifier: "+37069199199",
    external_user_id: "u1",
    client_metadata: { plan: "pro", n: [1, 2] },
    proof_expires_in: 3600,
  }),
  CreateVerificationRequest: () => ({
    assets: [
      { type: "email", identifier: "a@example.com", channel: "email" },
      { type: "phone", allowed_channels: ["telegram"] },
    ],
    reference_id: "r1",
    action_type: "login",
    action_context: { title: "Sign in", description: "Confirm" },
    redirect_url: "https://example.com/done",
    expires_in: 3600,
    partial_ok: true,
    external_user_id: "u1",
    client_metadata: { a: 1 },
  }),
  SubmitChallenge: () => ({ challenge_code: "ABC123" }),
  ValidateProof: () => ({ proof_token: "eyJhbGciOiJSUzI1NiJ9.e30.c2ln", identifier: "+37069199199" }),
  RevokeProof: () => ({ reason: "fraud" }),
  CreateSession: () => ({ channel: "telegram", client_metadata: { a: 1 } }),
  CreateAuthSession: () => ({ channel: "telegram", phone_number: "+37069199199", type: "2fa", client_metadata: { a: 1 } }),
  SessionTestVerify: () => ({ phone_number: "+37069199199" }),
  HostedStart: () => ({ identifier: "+37069199199", channel: "telegram" }),
  HostedSubmit: () => ({ challenge_code: "ABC123" }),
  AutoVerifyAsset: (pool) => ({ verification_id: pool.ids[1] }),
};

/** Every path to a value inside v (object keys and array indexes). */
function leafPaths(v: unknown, at: (string | number)[] = []): (string | number)[][] {
  if (v === null || typeof v !== "object") return [at];
  const entries = Array.isArray(v) ? v.map((x, i) => [i, x] as const) : Object.entries(v);
  return [at, ...entries.flatMap(([k, x]) => leafPaths(x, [...at, k]))];
}

function setAt(v: Json, path: (string | number)[], value: unknown): Json {
  if (!path.length) return value as Json;
  const copy: Json = Array.isArray(v) ? [...v] : { ...v };
  const [head, ...rest] = path;
  copy[head as string] = setAt((v?.[head as string] ?? {}) as Json, rest, value);
  return copy;
}

function mutatedExample(example: Json): fc.Arbitrary<Json> {
  const paths = [...leafPaths(example).filter((p) => p.length), ["client_metadata", "x"], ["external_user_id"]];
  return fc.oneof(
    { weight: 1, arbitrary: fc.constant(example) },
    { weight: 3, arbitrary: fc.tuple(fc.constantFrom(...paths), nastyValue).map(([p, v]) => setAt(example, p, v)) },
  );
}

/** Raw bodies: JSON built from the schema, or text and bytes that are not quite JSON. */
function bodyFor(doc: Json, op: Operation, pool: Pool): fc.Arbitrary<Buffer | undefined> {
  const example =
    EXAMPLES[
      String(op.body?.$ref ?? "")
        .split("/")
        .pop() ?? ""
    ]?.(pool);
  const shaped = op.body ? objectFor(doc, op.body, pool) : fc.dictionary(nastyString, nastyValue, { maxKeys: 3 });
  const json = example ? fc.oneof({ weight: 3, arbitrary: mutatedExample(example) }, { weight: 1, arbitrary: shaped }) : shaped;
  const text = json.map((o) => JSON.stringify(o));
  return fc.oneof(
    { weight: 14, arbitrary: text.map((t) => Buffer.from(t)) },
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: text.map((t) => Buffer.from(t.replace(/^\{/, '{"a":1,"a":2,'))) },
    {
      weight: 1,
      arbitrary: text.map((t) => Buffer.from(t.replace(/^\{/, '{"n":1e400,"m":123456789012345678901234567890,"s":"\\ud800\\u0000",'))),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(text, fc.uint8Array({ minLength: 1, maxLength: 4 }))
        .map(([t, b]) => Buffer.concat([Buffer.from(t.slice(0, -1)), Buffer.from(',"x":"'), Buffer.from(b.map((x) => x | 0x80)), Buffer.from('"}')])),
    },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom("", "null", "[]", '"text"', "{", '{"a":', "\ufeff{}", "[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]", "{}".padEnd(11_000, " "))
        .map((t) => Buffer.from(t)),
    },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)) },
  );
}

/** Mostly undefined, now and then a value of a. */
const sometimes = <T>(a: fc.Arbitrary<T>) => fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: a });

const CONTENT_TYPES = [
  "application/json",
  "application/json; charset=utf-8",
  "application/json; charset=latin1",
  "application/json; charset=utf-16",
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/json;;",
  "application/*",
  "",
];

/** One request against `op`: path params, query, headers and body all drawn together. */
export function requestFor(doc: Json, op: Operation, pool: Pool): fc.Arbitrary<FuzzRequest> {
  const headerText = fc.string({ unit: fc.constantFrom(..."aZ09-_.:/+= \u00e9\u00ff~!\"'"), maxLength: 40 });
  const params = fc.tuple(...op.pathParams.map(() => encoded(pool)));
  const query = fc.tuple(
    fc.tuple(
      ...op.query.map((q) =>
        sometimes(
          fc.oneof(
            valueFor(doc, q.schema, pool).map((v) => pct(typeof v === "string" ? v : (JSON.stringify(v) ?? ""))),
            encoded(pool),
          ),
        ),
      ),
    ),
    sometimes(fc.tuple(fc.constantFrom("x", "page", "limit", "status", "__proto__", "a[b]"), encoded(pool))),
  );
  // each optional header is sent now and then, so most requests fail on one thing at a time
  const headers = fc
    .record({
      "content-type": fc.oneof({ weight: 6, arbitrary: fc.constant("application/json") }, { weight: 2, arbitrary: fc.constantFrom(...CONTENT_TYPES) }),
      authorization: fc.oneof(
        { weight: 16, arbitrary: fc.constantFrom(...pool.keys).map((k) => `Bearer ${k}`) },
        { weight: 1, arbitrary: headerText.map((t) => `Bearer ${t}`) },
        {
          weight: 1,
          arbitrary: fc.constantFrom(`Bearer pk_test_${"A".repeat(43)}`, "Basic dXNlcjpwYXNz", `Bearer ${"x".repeat(8000)}`, ""),
        },
      ),
      "idempotency-key": sometimes(fc.oneof(headerText, fc.constant("k".repeat(300)))),
      "x-request-id": sometimes(fc.oneof(headerText, fc.constant("r".repeat(200)))),
      "x-request-token": fc.oneof(fc.constantFrom(...pool.tokens), headerText),
      "last-event-id": sometimes(headerText),
      "content-encoding": sometimes(fc.constantFrom("gzip", "br", "deflate", "compress", "identity")),
    })
    .map((h) => Object.fromEntries(Object.entries(h).filter(([, v]) => v !== undefined)) as Record<string, string>);
  return fc
    .tuple(params, query, headers, bodyFor(doc, op, pool), fc.constantFrom("plain", "plain", "plain", "plain", "plain", "gzip"), fc.boolean())
    .map(([ps, [qs, extra], hs, body, enc, anonymous]) => {
      let i = 0;
      const path = op.path.replace(/\{\w+\}/g, () => ps[i++]);
      const pairs = op.query.flatMap((q, j) => (qs[j] === undefined ? [] : [`${pct(q.name)}=${qs[j]}`]));
      if (extra) pairs.push(`${extra[0]}=${extra[1]}`);
      const headers: Record<string, string> = { ...hs };
      if (op.auth === "public" && anonymous) delete headers.authorization;
      let data = body;
      if (data && enc === "gzip") {
        data = gzipSync(data);
        headers["content-encoding"] = "gzip";
      }
      if (headers["content-type"] === "") delete headers["content-type"];
      return {
        op: `${op.method} ${op.path}`,
        method: op.method,
        path: pairs.length ? `${path}?${pairs.join("&")}` : path,
        headers,
        body: data,
      };
    });
}

/** Raw HTTP the client libraries refuse to send: the server's parser must still answer with the error shape. */
export const RAW_REQUESTS = [
  `GET /api/v1/verifications HTTP/1.1\r\nHost: x\r\nX-Long: ${"a".repeat(20_000)}\r\n\r\n`,
  "GET /api/v1/verifications HTTP/1.1\r\nHost: x\r\nX-Nul: a\u0000b\r\n\r\n",
  "GET /api/v1/verifications HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n",
  "GET /api/v1/verifications/ver_\u00ff HTTP/1.1\r\nHost: x\r\n\r\n",
  "GET /api/v1 HTTP/9.9\r\nHost: x\r\n\r\n",
  "POST /api/v1/verifications HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{}",
  "POST /api/v1/verifications HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
  "GET\u0000/ HTTP/1.1\r\nHost: x\r\n\r\n",
];

const b64url = (b: Buffer | string) => Buffer.from(b).toString("base64url");
/** A segment as an attacker encodes it: canonical, padded, standard base64, or with a space or a dot inside. */
const encoding = fc.constantFrom("canonical", "canonical", "canonical", "padded", "standard", "spaced");
function encode(bytes: Buffer, how: string): string {
  const c = b64url(bytes);
  if (how === "padded") return `${c}${"=".repeat((4 - (c.length % 4)) % 4 || 2)}`;
  if (how === "standard") return bytes.toString("base64");
  if (how === "spaced") return `${c.slice(0, 3)} ${c.slice(3)}`;
  return c;
}

/** What a header or payload member may be set to: nasty strings (NUL, lone surrogates, huge), wrong types. */
const jwtValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: nastyValue },
  fc.constantFrom("RS256", "none", "HS256", "ES256", "PS256", "RS512", "", "a\u0000"),
  fc.integer({ min: 129, max: 3_000 }).map((n) => "k".repeat(n)),
  fc.array(fc.string(), { maxLength: 3 }),
);

/**
 * Compact JWTs (and now and then an SD-JWT VC presentation's tail) built from a real one: header and payload members replaced, added or removed
 * (NUL and lone surrogates kept as JSON escapes, so they survive into the parsed header), raw
 * bytes that are not JSON or not UTF-8, segments encoded every way an attacker tries, and the
 * real signature, a random one, or none.
 */
export function jwtFor(real: { header: Record<string, unknown>; payload: Record<string, unknown>; signature: string }): fc.Arbitrary<string> {
  const member = (o: Record<string, unknown>) =>
    fc.tuple(fc.constantFrom(...Object.keys(o), "kid", "alg", "jku", "x5u", "jwk", "crit", "b64", "typ"), jwtValue);
  const json = (o: Record<string, unknown>) =>
    fc.oneof(
      {
        weight: 6,
        arbitrary: fc.array(member(o), { minLength: 1, maxLength: 3 }).map((changes) => Buffer.from(JSON.stringify({ ...o, ...Object.fromEntries(changes) }))),
      },
      fc.constant(Buffer.from(JSON.stringify(o))),
      fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)),
      fc.constantFrom("null", "[]", '"x"', "1", '{"alg":"RS256","kid":"a\\u0000"}', '{"alg":"RS256","kid":"\\ud800"}', "{").map((t) => Buffer.from(t)),
    );
  const signature = fc.oneof(
    fc.constant(real.signature),
    fc.constant(`${real.signature}==`),
    fc.constant(""),
    fc.uint8Array({ minLength: 1, maxLength: 300 }).map((a) => b64url(Buffer.from(a))),
  );
  // an SD-JWT VC presentation's tail now and then: disclosures and a key-binding JWT that are junk
  const tail = fc.constantFrom("", "", "", "", "~", "~WyJ4Il0~", "~x~y.z", `~${b64url('{"alg":"none","typ":"kb+jwt"}')}.e30.`);
  return fc
    .tuple(json(real.header), encoding, json(real.payload), encoding, signature, fc.constantFrom(3, 3, 3, 3, 2, 4), tail)
    .map(([h, he, p, pe, s, parts, t]) => [encode(h, he), encode(p, pe), s, "x"].slice(0, parts).join(".") + t);
}
