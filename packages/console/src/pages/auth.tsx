import { startAuthentication, startRegistration } from "@simplewebauthn/browser";
import { call, loadMe, session } from "../api.ts";
import { Frame, go, useAction } from "../ui.tsx";

export function InvitePage() {
  const [out, act] = useAction();
  const register = act(async () => {
    const token = location.hash.slice(1);
    const o = await call("POST", "/invite/options", { token });
    const response = await startRegistration({ optionsJSON: o.options });
    const r = await call("POST", "/invite/accept", { token, response });
    session.csrf = r.csrf_token;
    history.replaceState(null, "", "/console");
    await loadMe();
    go("/console/test/verifications");
    return undefined;
  });
  return (
    <Frame title="Register your passkey">
      <p>This single-use invite registers a passkey on this device for the ICV console.</p>
      <button type="button" onClick={register}>
        Register a passkey
      </button>
      {out}
    </Frame>
  );
}

export function SignInPage() {
  const [out, act] = useAction();
  const signIn = act(async () => {
    const o = await call("POST", "/sign-in/options");
    const response = await startAuthentication({ optionsJSON: o.options });
    const r = await call("POST", "/sign-in", { response });
    session.csrf = r.csrf_token;
    await loadMe();
    go("/console/test/verifications");
    return undefined;
  });
  return (
    <Frame title="Sign in">
      <button type="button" onClick={signIn}>
        Sign in with a passkey
      </button>
      {out}
    </Frame>
  );
}
