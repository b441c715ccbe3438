import { useRef, useState } from "preact/hooks";
import type { ComponentChildren } from "preact";
import { call, session, type Page } from "../api.ts";
import { Failure, Frame, Pager, pageOf, Table, useAction, useLoad, when } from "../ui.tsx";

interface Key {
  id: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export function KeysPage({ env }: { env: string }) {
  const { data: r, error, reload } = useLoad(() => call<Page<Key>>("GET", `/${env}/keys?limit=50`), env);
  const [once, setOnce] = useState<ComponentChildren>(null);
  const act = (fn: () => Promise<ComponentChildren>) => async () => {
    try {
      setOnce(await fn());
    } catch (e) {
      setOnce(<Failure error={e} />);
    }
  };
  const create = act(async () => {
    const k = await call("POST", `/${env}/keys`);
    await reload();
    return (
      <div class="once">
        <p>Your new key, shown only now:</p>
        <code data-key="">{k.key}</code>
      </div>
    );
  });
  const revoke = (k: Key) =>
    act(async () => {
      await call("POST", `/${env}/keys/${k.id}/revoke`);
      await reload();
      return null;
    });
  return (
    <Frame title={`API keys (${env})`}>
      <button type="button" onClick={create}>
        Create a key
      </button>
      <div aria-live="polite">{once}</div>
      {error ? <Failure error={error} /> : undefined}
      {r ? (
        <Table head={["Prefix", "Id", "Created", "Last used", "Revoked", ""]}>
          {r.data.map((k) => (
            <tr>
              <td>
                <code>{`${k.prefix}…`}</code>
              </td>
              <td>{k.id}</td>
              <td>{when(k.created_at)}</td>
              <td>{when(k.last_used_at)}</td>
              <td>{when(k.revoked_at)}</td>
              <td>
                {k.revoked_at ? (
                  ""
                ) : (
                  <button type="button" class="danger" aria-label={`Revoke ${k.prefix}`} onClick={revoke(k)}>
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          ))}
        </Table>
      ) : undefined}
    </Frame>
  );
}

interface User {
  id: string;
  email: string;
  role: string;
  created_at: string;
  revoked_at: string | null;
}

export function UsersPage() {
  const { data: r, error, reload } = useLoad(() => call<Page<User>>("GET", "/users?limit=100"), "users");
  const email = useRef<HTMLInputElement>(null);
  const role = useRef<HTMLSelectElement>(null);
  const [once, act] = useAction();
  const invite = act(async () => {
    const i = await call("POST", "/users", { email: email.current!.value, role: role.current!.value });
    await reload();
    return (
      <div class="once">
        <p>{`Invite link for ${i.user.email}, single use, shown only now:`}</p>
        <code>{i.invite_url}</code>
      </div>
    );
  });
  return (
    <Frame title="Users">
      <form class="bar" onSubmit={invite}>
        <label>
          Email
          <input ref={email} type="email" required aria-label="Email" />
        </label>
        <label>
          Role
          <select ref={role} aria-label="Role">
            {["viewer", "developer", "admin"].map((x) => (
              <option value={x}>{x}</option>
            ))}
          </select>
        </label>
        <button type="submit">Invite</button>
      </form>
      {once}
      {error ? <Failure error={error} /> : undefined}
      {r ? (
        <Table head={["Email", "Role", "Since", ""]}>
          {r.data.map((u) => (
            <tr>
              <td>{u.email}</td>
              <td>{u.role}</td>
              <td>{when(u.created_at)}</td>
              <td>
                {u.revoked_at ? (
                  `revoked ${when(u.revoked_at)}`
                ) : u.id === session.me?.user.id ? (
                  "you"
                ) : (
                  <button
                    type="button"
                    class="danger"
                    aria-label={`Revoke ${u.email}`}
                    onClick={act(async () => {
                      await call("POST", `/users/${u.id}/revoke`);
                      await reload();
                      return undefined;
                    })}
                  >
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          ))}
        </Table>
      ) : undefined}
    </Frame>
  );
}

interface AuditEntry {
  at: string;
  email: string | null;
  action: string;
  environment?: string | null;
  target?: string | null;
  outcome: string;
  ip: string | null;
}

export function AuditPage() {
  const url = `/audit?limit=50&page=${pageOf()}`;
  const { data: r, error } = useLoad(() => call<Page<AuditEntry>>("GET", url), url);
  return (
    <Frame title="Audit log">
      {error ? <Failure error={error} /> : undefined}
      {r ? (
        <>
          <Table head={["When", "Who", "What", "Outcome", "From"]}>
            {r.data.map((a) => (
              <tr>
                <td>{when(a.at)}</td>
                <td>{a.email ?? "—"}</td>
                <td>{`${a.action}${a.environment ? ` (${a.environment})` : ""}${a.target ? ` ${a.target}` : ""}`}</td>
                <td>{a.outcome}</td>
                <td>{a.ip ?? ""}</td>
              </tr>
            ))}
          </Table>
          <Pager p={r.pagination} base="/console/audit" />
        </>
      ) : undefined}
    </Frame>
  );
}
