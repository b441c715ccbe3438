import { LogService } from "@icv/contracts/gen/icv/log/v1/log_service_pb.ts";
import { allow } from "@icv/platform";

/**
 * Who may call the log service, per RPC (mutual TLS: the caller's certificate names it). The
 * gateway serves the log's public endpoints and adds positions to proof answers; verification
 * shows "logged" on public profiles. Everything else is PERMISSION_DENIED. Nothing writes through
 * an RPC: the log is fed by the proof events only.
 */
export const logCallers = [
  allow(LogService, {
    getCheckpoint: ["gateway"],
    getLogKey: ["gateway"],
    getInclusion: ["gateway"],
    getConsistency: ["gateway"],
    getEntries: ["gateway"],
    getTile: ["gateway"],
    getProofPositions: ["gateway", "verification"],
  }),
];
