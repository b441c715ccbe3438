/** A project's members as a tenant gives them, checked: lengths, https logo, #rrggbb colour, an email, http(s) callbacks. */
import { AppError, OutboundError, parseTargetUrl } from "@icv/platform";
import { PROJECT_FIELDS, type ProjectField, type ProjectValues } from "../store/projects.ts";

const invalid = (field: string, message: string) =>
  new AppError("validation_error", `${field}: ${message}`, { details: [{ field, message, code: "invalid" }] });

const MAX: Record<ProjectField, number> = {
  name: 100,
  description: 500,
  business_name: 100,
  logo_url: 2048,
  primary_color: 7,
  support_email: 254,
  success_url: 2048,
  failure_url: 2048,
  cancel_url: 2048,
};
/** Where each member sits in the REST shape (for error details). */
export const FIELD_PATH: Record<ProjectField, string> = {
  name: "name",
  description: "description",
  business_name: "branding.business_name",
  logo_url: "branding.logo_url",
  primary_color: "branding.primary_color",
  support_email: "branding.support_email",
  success_url: "callbacks.success_url",
  failure_url: "callbacks.failure_url",
  cancel_url: "callbacks.cancel_url",
};

const COLOR = /^#(?:[0-9a-fA-F]{3}){1,2}$/;
// one @, no spaces or angle brackets or quotes (it is shown in messages and on the page)
const EMAIL = /^[^\s@<>"'()\\,;:]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$/;

function checkOne(k: ProjectField, raw: string): string {
  const v = raw.trim();
  const at = FIELD_PATH[k];
  if (!v || v.length > MAX[k]) throw invalid(at, `must be 1 to ${MAX[k]} characters`);
  if (/[\u0000-\u001f\u007f]/.test(v) && k !== "description") throw invalid(at, "must not hold control characters");
  if (k === "primary_color") {
    if (!COLOR.test(v)) throw invalid(at, "must be a hex colour, #rgb or #rrggbb");
    return v.toLowerCase();
  }
  if (k === "support_email") {
    if (!EMAIL.test(v)) throw invalid(at, "must be an email address");
    return v;
  }
  if (k === "logo_url") {
    let u: URL;
    try {
      u = new URL(v);
    } catch {
      throw invalid(at, "must be an https URL");
    }
    if (u.protocol !== "https:" || u.username || u.password) throw invalid(at, "must be an https URL without credentials");
    return u.toString();
  }
  if (k.endsWith("_url")) {
    try {
      return parseTargetUrl(v).toString();
    } catch (e) {
      if (e instanceof OutboundError) throw invalid(at, e.message);
      throw e;
    }
  }
  return v;
}

/** The members named in `fields` (all given ones when undefined), checked; a named member without a value is null (cleared). */
export function projectValues(input: Partial<Record<ProjectField, string | undefined>>, fields?: readonly string[]): ProjectValues {
  const out: ProjectValues = {};
  const named = fields ?? PROJECT_FIELDS.filter((k) => input[k] !== undefined);
  for (const f of named) {
    if (!(PROJECT_FIELDS as readonly string[]).includes(f)) throw new AppError("validation_error", `unknown project field ${f}`);
    const k = f as ProjectField;
    const raw = input[k];
    if (raw === undefined) {
      if (k === "name") throw invalid("name", "cannot be cleared");
      out[k] = null;
    } else out[k] = checkOne(k, raw);
  }
  return out;
}
