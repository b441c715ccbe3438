import { z } from "zod";
import { scopeOf, type Clients } from "../clients.ts";
import { route, type RouteDef } from "../registry.ts";

const meta = (method: RouteDef["method"], path: string) => ({ method, path, tag: "Console", summary: path, auth: "public" as const, responses: {} });

/** The environment's retention as the console shows it: days, or null (kept until redacted). */
const shown = (days: number) => ({ retention_days: days > 0 ? days : null });

/**
 * `/console/api/{env}/retention` (docs/privacy.md, "Retention"): read (any role) and set (admin,
 * developer; a viewer's change is refused and audit-logged by the console's guard) the
 * environment's `retention_days`, by RPC to the verification service, which owns the setting and
 * checks it again. 1 to 3650 days, or null to keep verifications until they are redacted.
 */
export function retentionRoutes(c: Clients): RouteDef[] {
  return [
    route({
      ...meta("get", "/retention"),
      async handler({ req }) {
        return { body: shown((await c.verification.getRetention({ scope: scopeOf(req) })).retentionDays) };
      },
    }),
    route({
      ...meta("put", "/retention"),
      body: z.object({ retention_days: z.number().int().min(1).max(3650).nullable() }).strict(),
      async handler({ req, body }) {
        const r = await c.verification.setRetention({ scope: scopeOf(req), retentionDays: body.retention_days ?? 0 });
        return { body: shown(r.retentionDays) };
      },
    }),
  ];
}
