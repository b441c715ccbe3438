import { Environment, type TenantScope } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { AppError } from "./errors.ts";

export type EnvName = "live" | "test";

export interface Scope {
  tenantId: string;
  env: EnvName;
  /** The originating HTTP request's id, for log correlation (absent for internal calls). */
  requestId?: string;
}

/** The tenant scope every tenant-owned RPC must carry; a call without one is refused. */
export function requireScope(scope: TenantScope | undefined): Scope {
  if (!scope?.tenantId || scope.environment === Environment.UNSPECIFIED) {
    throw new AppError("unauthorized", "tenant scope missing");
  }
  return {
    tenantId: scope.tenantId,
    env: scope.environment === Environment.LIVE ? "live" : "test",
    requestId: scope.requestId || undefined,
  };
}

export const toEnvironment = (env: EnvName): Environment => (env === "live" ? Environment.LIVE : Environment.TEST);
