/**
 * A session's project (owned by the verification service): its id checked at create, and the
 * bot's replies rendered from its active templates there (found false: the built-in text of texts.ts).
 */
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type { ProjectService } from "@icv/contracts/gen/icv/verification/v1/project_service_pb.ts";
import { AppError, isId, toEnvironment, type Scope } from "@icv/platform";
import type { SessionRow } from "./store/sessions.ts";

const rpcScope = (s: Scope) => ({ tenantId: s.tenantId, environment: toEnvironment(s.env), requestId: s.requestId ?? "" });

/** Another scope's or an unknown project is validation_error (the same answer: no oracle). */
export async function checkProject(d: { projects?: Client<typeof ProjectService> }, scope: Scope, id: string): Promise<void> {
  const bad = () =>
    new AppError("validation_error", "project_id: no such project", {
      details: [{ field: "project_id", message: "no such project", code: "not_found" }],
    });
  if (!d.projects || !isId("project", id)) throw bad();
  try {
    await d.projects.getProject({ scope: rpcScope(scope), id });
  } catch (e) {
    if (ConnectError.from(e).code === Code.NotFound) throw bad();
    throw e;
  }
}

/** The template type of a session's answer: phone-first and auth sessions confirmed, or expired. */
function typeOf(s: SessionRow, outcome: string): string | undefined {
  if (outcome === "expired") return "verification_expired";
  if (outcome !== "verified") return undefined;
  if (s.kind === "phone") return "verification_success";
  return s.auth_type === "login" ? "login_success" : s.auth_type === "2fa" ? "2fa_success" : undefined;
}

/** The reply from the session's project: its template's text for the outcome (when it has an active one), else its business name for the built-in text. */
export async function projectReply(projects: Client<typeof ProjectService>, s: SessionRow, outcome: string): Promise<{ text?: string; businessName?: string }> {
  const type = typeOf(s, outcome);
  const r = await projects.renderMessage({
    scope: rpcScope({ tenantId: s.tenant_id, env: s.environment }),
    projectId: s.project_id ?? undefined,
    channel: s.channel,
    type: type ?? "verification_success",
    variables: {},
  });
  return type && r.found && r.message ? { text: r.message.text } : { businessName: r.businessName };
}
