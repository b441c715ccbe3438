import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import type { LogService } from "@icv/contracts/gen/icv/log/v1/log_service_pb.ts";
import type { Client } from "@connectrpc/connect";
import type { Express, NextFunction, Request, RequestHandler, Response } from "express";
import { z } from "zod";
import { scopeOf, type Clients } from "../clients.ts";
import { idParams } from "../input.ts";
import { route, type RouteDef } from "../registry.ts";
import { ErrorBody } from "../schemas.ts";

const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64");
const err = (description: string) => ({ description, schema: ErrorBody });

const envParam = z
  .enum(["live", "test"])
  .optional()
  .describe("live (default): the live log; test: the test log (its own origin, ending /test, and its own key)");
const environmentOf = (env: "live" | "test" | undefined) => (env === "test" ? Environment.TEST : Environment.LIVE);
const size = z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

const Inclusion = z
  .object({
    entry: z.string().describe("The entry (base64 of its UTF-8 JSON); its leaf hash is SHA-256(0x00 ‖ entry)"),
    leaf_index: z.number().int(),
    proof: z.array(z.string()).describe("The RFC 9162 audit path, base64 hashes, leaf side first"),
    checkpoint: z.string().describe("The signed checkpoint (C2SP signed note) the path leads to"),
  })
  .meta({ id: "LogInclusion" });

/** The transparency log's public endpoints (DECISIONS.md, Transparency log), and a proof's inclusion for its owner. */
export function logRoutes(c: Clients): RouteDef[] {
  return [
    route({
      method: "get",
      path: "/api/v1/log/checkpoint",
      tag: "Transparency log",
      summary: "The latest signed checkpoint (C2SP tlog-checkpoint as a signed note, Ed25519)",
      description: "text/plain: origin, tree size, base64 root hash, a blank line and the signature line. Check it with the key at /.well-known/icv-log-key.",
      auth: "public",
      query: z.object({ env: envParam }).strict(),
      responses: { 200: { description: "The checkpoint", contentType: "text/plain" } },
      async handler({ res, query }) {
        const r = await c.log.getCheckpoint({ environment: environmentOf(query.env) });
        res.setHeader("Cache-Control", "no-cache");
        res.type("text/plain; charset=utf-8").send(r.note);
        return {};
      },
    }),
    route({
      method: "get",
      path: "/.well-known/icv-log-key",
      tag: "Transparency log",
      summary: "The log's public key as a C2SP verifier key (origin+key_id+base64(0x01 ‖ Ed25519 key))",
      description: "text/plain, one line. Pin it: every checkpoint's signature line must verify with it (a monitor keeps it in its state file).",
      auth: "public",
      query: z.object({ env: envParam }).strict(),
      responses: { 200: { description: "The verifier key", contentType: "text/plain" } },
      async handler({ res, query }) {
        const r = await c.log.getLogKey({ environment: environmentOf(query.env) });
        res.setHeader("Cache-Control", "public, max-age=86400");
        res.type("text/plain; charset=utf-8").send(`${r.vkey}\n`);
        return {};
      },
    }),
    route({
      method: "get",
      path: "/api/v1/log/consistency",
      tag: "Transparency log",
      summary: "An RFC 9162 consistency proof between two tree sizes",
      description:
        "Query first and second (0 < first ≤ second ≤ the latest checkpoint's size): the hashes that prove the tree of size first is a prefix of the tree of size second.",
      auth: "public",
      query: z.object({ first: size, second: size, env: envParam }).strict(),
      responses: {
        200: { description: "The proof", schema: z.object({ proof: z.array(z.string()) }).meta({ id: "LogConsistency" }) },
        400: err("validation_error: first above second, first 0, or second beyond the tree size"),
      },
      async handler({ query }) {
        const r = await c.log.getConsistency({ environment: environmentOf(query.env), first: BigInt(query.first), second: BigInt(query.second) });
        return { body: { proof: r.proof.map(b64) } };
      },
    }),
    route({
      method: "get",
      path: "/api/v1/log/entries",
      tag: "Transparency log",
      summary: "Entries [start, end) for monitors (at most 1,000)",
      description:
        "Query start and end (end − start ≤ 1,000, end ≤ the latest checkpoint's size): each entry is the base64 of the JSON leaf (kind, proof id, subject or its salted hash, time).",
      auth: "public",
      query: z.object({ start: size, end: size, env: envParam }).strict(),
      responses: {
        200: { description: "The entries, base64 of their JSON", schema: z.object({ entries: z.array(z.string()) }).meta({ id: "LogEntries" }) },
        400: err("validation_error: more than 1,000, start above end, or end beyond the tree size"),
      },
      async handler({ query }) {
        const r = await c.log.getEntries({ environment: environmentOf(query.env), start: BigInt(query.start), end: BigInt(query.end) });
        return { body: { entries: r.entries.map(b64) } };
      },
    }),
    route({
      method: "get",
      path: "/api/v1/log/proof",
      tag: "Transparency log",
      summary: 'The inclusion proof of the entry at leaf_index (public: a profile page\'s "logged" link)',
      description: "The leaf, its index and the audit path to the root of the latest checkpoint, which is answered with it.",
      auth: "public",
      query: z.object({ leaf_index: size, env: envParam }).strict(),
      responses: { 200: { description: "The inclusion proof", schema: Inclusion }, 404: err("not_found: beyond the latest checkpoint") },
      async handler({ query }) {
        const r = await c.log.getInclusion({ environment: environmentOf(query.env), leafIndex: BigInt(query.leaf_index) });
        return { body: { entry: b64(r.entry), leaf_index: Number(r.leafIndex), proof: r.proof.map(b64), checkpoint: r.checkpoint } };
      },
    }),
    route({
      method: "get",
      path: "/api/v1/proofs/{id}/inclusion",
      tag: "Transparency log",
      summary: "The inclusion proof of one of your proofs in the log (its issuance, or with kind=revoked its revocation)",
      description: "A test proof is in the test log: its checkpoint is the test log's. 404 while the proof is not logged (within 5 s of its issuance).",
      auth: "key",
      params: idParams("verification"),
      query: z.object({ kind: z.enum(["issued", "revoked"]).optional() }).strict(),
      responses: { 200: { description: "The inclusion proof", schema: Inclusion }, 404: err("not_found: no such proof of yours, or not logged yet") },
      async handler({ req, params, query }) {
        const scope = scopeOf(req);
        // the owner's proof only (not_found else); then its entry in the log of its environment
        await c.proof.getProofStatus({ scope, proofId: params.id });
        const r = await c.log.getInclusion({ environment: scope.environment, proofId: params.id, kind: query.kind ?? "issued" });
        return { body: { entry: b64(r.entry), leaf_index: Number(r.leafIndex), proof: r.proof.map(b64), checkpoint: r.checkpoint } };
      },
    }),
  ];
}

/**
 * A tlog-tiles index path ("x001/x234/067", then ".p/<width>" for a partial tile): the index and
 * the width, or undefined when it is not one.
 */
export function parseTilePath(parts: string[]): { index: number; width: number } | undefined {
  let width = 256;
  let elems = parts;
  const last = parts.length >= 2 ? parts[parts.length - 2] : "";
  if (last.endsWith(".p")) {
    if (!/^[1-9]\d{0,2}$/.test(parts[parts.length - 1])) return undefined;
    width = Number(parts[parts.length - 1]);
    if (width >= 256) return undefined;
    elems = [...parts.slice(0, -2), last.slice(0, -2)];
  }
  if (!elems.length || elems.length > 6) return undefined;
  let digits = "";
  for (let i = 0; i < elems.length; i++) {
    const m = (i < elems.length - 1 ? /^x(\d{3})$/ : /^(\d{3})$/).exec(elems[i]);
    if (!m) return undefined;
    digits += m[1];
  }
  return { index: Number(digits), width };
}

/**
 * GET /api/v1/log/tile/<L>/<N>[.p/<W>] and /api/v1/log/tile/entries/<N>[.p/<W>] (C2SP tlog-tiles),
 * ?env=test for the test log. The test log also has its own tlog-tiles prefix,
 * /api/v1/log/test/ (checkpoint and tiles), for tile clients that take a prefix URL alone.
 */
export function mountLogTiles(app: Express, limit: RequestHandler, log: Client<typeof LogService>): void {
  const tile = (fixed?: "test") => async (req: Request, res: Response, next: NextFunction) => {
    try {
      const parts = (req.params as { path: string[] }).path;
      const level = parts[0] === "entries" ? -1 : /^\d{1,2}$/.test(parts[0]) ? Number(parts[0]) : undefined;
      const at = parseTilePath(parts.slice(1));
      const env = fixed ?? req.query.env;
      if (level === undefined || !at || (env !== undefined && env !== "live" && env !== "test")) return next();
      const r = await log.getTile({ environment: environmentOf(env), level, index: BigInt(at.index), width: at.width });
      res.setHeader("Content-Type", "application/octet-stream");
      // a tile never changes once it exists (a partial one is superseded by a wider one)
      res.setHeader("Cache-Control", "public, max-age=31536000, immutable");
      res.status(200).end(Buffer.from(r.data));
    } catch (e) {
      next(e);
    }
  };
  app.get("/api/v1/log/tile/*path", limit, tile());
  app.get("/api/v1/log/test/tile/*path", limit, tile("test"));
  app.get("/api/v1/log/test/checkpoint", limit, async (_req: Request, res: Response, next: NextFunction) => {
    try {
      const r = await log.getCheckpoint({ environment: Environment.TEST });
      res.setHeader("Cache-Control", "no-cache");
      res.type("text/plain; charset=utf-8").send(r.note);
    } catch (e) {
      next(e);
    }
  });
}
