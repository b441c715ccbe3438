// Generated code lives under ./gen (buf generate); import the modules you need by path, e.g.
// `@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts`. This index names them for discovery.
export * as health from "./gen/grpc/health/v1/health_pb.ts";
export * as common from "./gen/icv/common/v1/scope_pb.ts";
export * as verification from "./gen/icv/verification/v1/verification_service_pb.ts";
export * as verificationTypes from "./gen/icv/verification/v1/verification_pb.ts";
export * as proof from "./gen/icv/proof/v1/proof_service_pb.ts";
export * as gatewayAdmin from "./gen/icv/gateway/v1/admin_service_pb.ts";
