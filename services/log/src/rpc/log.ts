import type { ConnectRouter } from "@connectrpc/connect";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { LogService } from "@icv/contracts/gen/icv/log/v1/log_service_pb.ts";
import { AppError } from "@icv/platform";
import type { LogKey } from "../log-key.ts";
import { consistency, entries, inclusion, latestCheckpoint, positions, tile } from "../reads.ts";
import type { LogEnv, LogStore } from "../store/log.ts";

/** The log an RPC names: test only when it says so (UNSPECIFIED is the live log). */
const envOf = (e: Environment): LogEnv => (e === Environment.TEST ? "test" : "live");
const num = (n: bigint): number => (n > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(n));

/** The LogService handlers: thin, they call the reads (reads.ts) and convert their answers. */
export function logRoutes(store: LogStore, keys: ReadonlyMap<LogEnv, LogKey>) {
  return (router: ConnectRouter) =>
    router.service(LogService, {
      async getCheckpoint(req) {
        const c = await latestCheckpoint(store, envOf(req.environment));
        return { note: c.note, size: BigInt(c.size) };
      },
      async getLogKey(req) {
        const k = keys.get(envOf(req.environment))!;
        return { vkey: k.vkey, origin: k.origin };
      },
      async getInclusion(req) {
        const kind = req.kind || "issued";
        if (kind !== "issued" && kind !== "revoked") throw new AppError("validation_error", "kind must be issued or revoked");
        const r = await inclusion(store, envOf(req.environment), req.proofId ? { proofId: req.proofId, kind } : { leafIndex: num(req.leafIndex) });
        return { entry: r.entry, leafIndex: BigInt(r.leafIndex), proof: r.proof, checkpoint: r.checkpoint, treeSize: BigInt(r.treeSize) };
      },
      async getConsistency(req) {
        return { proof: await consistency(store, envOf(req.environment), num(req.first), num(req.second)) };
      },
      async getEntries(req) {
        return { entries: await entries(store, envOf(req.environment), num(req.start), num(req.end)) };
      },
      async getTile(req) {
        return { data: await tile(store, envOf(req.environment), req.level, num(req.index), req.width) };
      },
      async getProofPositions(req) {
        const found = await positions(store, envOf(req.environment), req.proofIds.slice(0, 1_000));
        return { positions: found.map((p) => ({ proofId: p.proofId, leafIndex: BigInt(p.leafIndex), checkpointSize: BigInt(p.checkpointSize) })) };
      },
    });
}
