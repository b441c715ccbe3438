// The tenant console in the browser: Preact components over /console/api/, bundled with the passkey
// library and Chart.js into /console/assets/console.<hash>.js (no inline script; every value is
// rendered as text). The router reads the path: /console/{live|test}/{section}/{id}.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { loadMe, session } from "./api.ts";
import { InvitePage, SignInPage } from "./pages/auth.tsx";
import { AuditPage, KeysPage, UsersPage } from "./pages/admin.tsx";
import { DeliveriesPage, WebhookPage } from "./pages/webhook.tsx";
import { MessagesPage, RequestsPage } from "./pages/lists.tsx";
import { OverviewPage } from "./pages/overview.tsx";
import { ProfilePage, ProfilesPage } from "./pages/profiles.tsx";
import { RetentionPage } from "./pages/retention.tsx";
import { BrandingPage, ProjectsPage, TemplatesPage } from "./pages/projects.tsx";
import { VerificationPage } from "./pages/verification.tsx";
import { VerificationsPage } from "./pages/verifications.tsx";
import { Header } from "./header.tsx";
import { go, useLocation } from "./ui.tsx";

function Section({ env, section, id, sub }: { env: "live" | "test"; section?: string; id?: string; sub?: string }) {
  switch (section) {
    case "keys":
      return <KeysPage env={env} />;
    case "users":
      return <UsersPage />;
    case "audit":
      return <AuditPage />;
    case "overview":
      return <OverviewPage env={env} />;
    case "requests":
      return <RequestsPage env={env} />;
    case "messages":
      return <MessagesPage env={env} />;
    case "projects":
      if (id && sub === "branding") return <BrandingPage env={env} id={id} />;
      return id ? <TemplatesPage env={env} id={id} /> : <ProjectsPage env={env} />;
    case "profiles":
      return id ? <ProfilePage env={env} id={id} /> : <ProfilesPage env={env} />;
    case "webhook":
      return <WebhookPage env={env} />;
    case "deliveries":
      return <DeliveriesPage env={env} />;
    case "retention":
      return <RetentionPage env={env} />;
    default:
      return id && section === "verifications" ? <VerificationPage env={env} id={id} /> : <VerificationsPage env={env} />;
  }
}

function App() {
  const at = useLocation();
  const [signedIn, setSignedIn] = useState<boolean | undefined>(session.me ? true : undefined);
  const parts = location.pathname.replace(/\/+$/, "").split("/").slice(2);
  const inviting = parts[0] === "invite";
  useEffect(() => {
    if (inviting || session.me) return;
    loadMe().then(
      () => setSignedIn(true),
      () => setSignedIn(false),
    );
  }, [at, inviting]);
  useEffect(() => {
    if (session.me && (parts[0] === "sign-in" || parts.length === 0)) go("/console/test/verifications");
  });
  if (inviting) return <Shell>{<InvitePage />}</Shell>;
  if (!session.me && signedIn === undefined) return <p>Loading…</p>;
  if (!session.me) return <Shell>{<SignInPage />}</Shell>;
  if (!["live", "test"].includes(parts[0])) parts.unshift("test");
  const [env, section, id, sub] = parts as ["live" | "test", string?, string?, string?];
  return (
    <Shell env={env} section={section}>
      <Section key={at} env={env} section={section} id={id} sub={sub} />
    </Shell>
  );
}

/** The header (rendered into <header id="top">) and the page (into <main id="main">). */
function Shell({ env, section, children }: { env?: "live" | "test"; section?: string; children: preact.ComponentChildren }) {
  useEffect(() => {
    const top = document.getElementById("top");
    if (top) render(<Header env={env} section={section} />, top);
  });
  return <>{children}</>;
}

render(<App />, document.getElementById("main")!);
