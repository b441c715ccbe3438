import type { ServiceCallers } from "@icv/platform";

/**
 * Who may call the domain service: it has no RPCs yet (only grpc.health.v1, open to every
 * certificate holder). Its RPCs arrive with their issue, with `verification` as their caller.
 */
export const domainCallers: ServiceCallers[] = [];
