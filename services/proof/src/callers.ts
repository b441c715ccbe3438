import { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import { allow } from "@icv/platform";

/**
 * Who may call the proof service, per RPC (mutual TLS: the caller's certificate names it).
 * Everything else is PERMISSION_DENIED. Keep in step with the callers' code: a change here is
 * a change of the security model (docs/internal-calls.md) and of the chart's NetworkPolicy.
 */
export const proofCallers = [
  allow(ProofService, {
    // only verification issues and revokes proofs (after a completed challenge / on revocation)
    issueProof: ["verification"],
    revokeProof: ["verification"],
    // suspension and reinstatement follow the verification service's re-checks of the asset
    suspendProof: ["verification"],
    reinstateProof: ["verification"],
    // verification validates for POST /proofs/validate
    validateProof: ["verification"],
    // verification re-checks the proofs a public profile lists, in one call per page view
    getProofStatuses: ["verification"],
    // the gateway's public proof endpoints and the admin listener's key rotation
    getProofStatus: ["gateway"],
    getRevocationList: ["gateway"],
    getStatusList: ["gateway"],
    getJwks: ["gateway"],
    rotateSigningKey: ["gateway"],
  }),
];
