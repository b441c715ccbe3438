import { call, isAdmin, session } from "./api.ts";
import { go, Link } from "./ui.tsx";

/** The sections the live/test switch keeps (others go to the verifications). */
const ENV_SECTIONS = ["keys", "webhook", "deliveries", "overview", "requests", "projects", "profiles", "retention"];

async function signOut() {
  await call("POST", "/sign-out").catch(() => undefined);
  session.me = undefined;
  session.csrf = "";
  go("/console/sign-in");
}

export function Header({ env, section }: { env?: "live" | "test"; section?: string }) {
  const me = session.me;
  if (!me || !env) return <span class="brand">ICV console</span>;
  const keep = section && ENV_SECTIONS.includes(section) ? section : "verifications";
  const nav = (path: string, text: string, name: string) => (
    <Link href={path} current={section === name}>
      {text}
    </Link>
  );
  return (
    <>
      <span class="brand">{`ICV console · ${me.tenant.name ?? me.tenant.id}`}</span>
      {/* biome-ignore lint/a11y/useSemanticElements: a group of links (the environment switch); fieldset is for form controls */}
      <span class={`env ${env}`} role="group" aria-label="Environment">
        {(["test", "live"] as const).map((e) => (
          <a
            href={`/console/${e}/${keep}`}
            aria-current={e === env ? "true" : undefined}
            onClick={(ev) => {
              ev.preventDefault();
              go(`/console/${e}/${keep}`);
            }}
          >
            {e === "test" ? "Test" : "Live"}
          </a>
        ))}
      </span>
      <nav aria-label="Console">
        {nav(`/console/${env}/overview`, "Overview", "overview")}
        {nav(`/console/${env}/verifications`, "Verifications", "verifications")}
        {nav(`/console/${env}/requests`, "Requests", "requests")}
        {env === "test" ? nav("/console/test/messages", "Test messages", "messages") : undefined}
        {nav(`/console/${env}/projects`, "Projects", "projects")}
        {nav(`/console/${env}/profiles`, "Profiles", "profiles")}
        {nav(`/console/${env}/webhook`, "Webhook", "webhook")}
        {nav(`/console/${env}/deliveries`, "Deliveries", "deliveries")}
        {nav(`/console/${env}/retention`, "Retention", "retention")}
        {isAdmin() ? nav(`/console/${env}/keys`, "API keys", "keys") : undefined}
        {isAdmin() ? nav("/console/users", "Users", "users") : undefined}
        {nav("/console/audit", "Audit log", "audit")}
      </nav>
      <span>{`${me.user.email} (${me.user.role})`}</span>
      <button class="plain" type="button" onClick={signOut}>
        Sign out
      </button>
    </>
  );
}
