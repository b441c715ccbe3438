import { z } from "zod";
import { route, type RouteDef } from "../registry.ts";

const ok = { 200: { description: "See the interface specification" } };
/** A documented endpoint without a handler; its path parameters are read from the path. */
function planned(method: RouteDef["method"], path: string, tag: string, summary: string, auth: RouteDef["auth"] = "key"): RouteDef {
  const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
  const params = names.length ? z.object(Object.fromEntries(names.map((n) => [n, z.string()]))) : undefined;
  return route({ method, path, tag, summary: `${summary} (planned)`, auth, params, responses: ok });
}

/**
 * Endpoints of the spec that later issues implement. They are documented now (so the contract
 * is complete in /api/openapi.json) and answer 404 until their handler lands.
 */
export const plannedRoutes: RouteDef[] = [
  planned("post", "/api/v1/verifications/domain", "Domains", "Start a domain verification"),
  planned("post", "/api/v1/verifications/domain/{id}/check", "Domains", "Check a domain verification"),
  planned("get", "/api/v1/me/profiles", "Profiles", "List profiles"),
  planned("patch", "/api/v1/me/profiles/{id}", "Profiles", "Update a profile"),
  planned("delete", "/api/v1/me/profiles/{id}", "Profiles", "Delete a profile"),
  planned("get", "/api/v1/me/projects", "Message templates", "List projects and their templates"),
  planned("put", "/api/v1/me/projects/{id}/templates/{channel}/{type}", "Message templates", "Set a message template"),
];
