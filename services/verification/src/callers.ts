import { VerificationService } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import { VerificationRequestService } from "@icv/contracts/gen/icv/verification/v1/verification_request_service_pb.ts";
import { allow } from "@icv/platform";

/**
 * Who may call the verification service, per RPC (mutual TLS: the caller's certificate names
 * it). The gateway calls the tenant-facing RPCs; the session service only the three it needs
 * to finish verifications from sessions and inbound messages. Everything else is PERMISSION_DENIED.
 */
export const verificationCallers = [
  allow(VerificationService, {
    createVerification: ["gateway"],
    getVerification: ["gateway"],
    listVerifications: ["gateway"],
    submitChallenge: ["gateway"],
    testVerify: ["gateway"],
    revokeVerification: ["gateway"],
    validateProof: ["gateway"],
    listVerificationEvents: ["gateway"],
    resendChallenge: ["gateway"],
    listVerifiedUsers: ["gateway"],
    getVerifiedUser: ["gateway"],
    listTestMessages: ["gateway"],
    // the session service: test messages of bot sessions, codes sent in by message, sessions that verified
    recordTestMessage: ["session"],
    completeInboundCode: ["session"],
    recordSessionVerification: ["session"],
  }),
  allow(VerificationRequestService, {
    createVerificationRequest: ["gateway"],
    getVerificationRequest: ["gateway"],
    getVerificationRequestByReference: ["gateway"],
    listVerificationRequests: ["gateway"],
    cancelVerificationRequest: ["gateway"],
    listReusableProofs: ["gateway"],
    autoVerifyAsset: ["gateway"],
    getHostedRequest: ["gateway"],
    startHostedAsset: ["gateway"],
    submitHostedAsset: ["gateway"],
    testVerifyHostedAsset: ["gateway"],
  }),
];
