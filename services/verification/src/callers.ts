import { VerificationService } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import { VerificationRequestService } from "@icv/contracts/gen/icv/verification/v1/verification_request_service_pb.ts";
import { ProjectService } from "@icv/contracts/gen/icv/verification/v1/project_service_pb.ts";
import { ProfileService } from "@icv/contracts/gen/icv/verification/v1/profile_service_pb.ts";
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
    // for internal teams only (INTERNAL_CLIENTS_FILE): no service reads in bulk
    exportVerifications: [],
    // the tenant console's overview and search by identifier (the gateway hosts the console)
    getVerificationStats: ["gateway"],
    searchVerifications: ["gateway"],
    // the end user's OAuth sign-in, through the gateway's public /oauth routes
    startOAuthSignIn: ["gateway"],
    completeOAuthSignIn: ["gateway"],
    // the session service: test messages of bot sessions, codes sent in by message, sessions that verified
    recordTestMessage: ["session"],
    completeInboundCode: ["session"],
    recordSessionVerification: ["session"],
    createDomainVerification: ["gateway"],
    checkDomainVerification: ["gateway"],
    // personal data (docs/privacy.md): the tenant's redact, export and retention (API, console, admin CLI)
    redactVerification: ["gateway"],
    redactUser: ["gateway"],
    exportUser: ["gateway"],
    getRetention: ["gateway"],
    setRetention: ["gateway"],
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
    checkHostedAsset: ["gateway"],
  }),
  allow(ProjectService, {
    listProjects: ["gateway"],
    createProject: ["gateway"],
    // the session service checks a session's project_id
    getProject: ["gateway", "session"],
    updateProject: ["gateway"],
    deleteProject: ["gateway"],
    listTemplates: ["gateway"],
    getTemplate: ["gateway"],
    putTemplate: ["gateway"],
    deleteTemplate: ["gateway"],
    previewTemplate: ["gateway"],
    // the session service: bot replies from the session's project templates
    renderMessage: ["session"],
    getProjectLogo: ["gateway"],
  }),
  allow(ProfileService, {
    listProfiles: ["gateway"],
    createProfile: ["gateway"],
    getProfile: ["gateway"],
    updateProfile: ["gateway"],
    deleteProfile: ["gateway"],
    // the public page at /p/{id} (the gateway serves it without a key)
    getPublicProfile: ["gateway"],
  }),
];
