import { useRef, useState } from "preact/hooks";
import { call, type Page, type Row } from "../api.ts";
import { Failure, Frame, go, Link, Pager, query, Table, useLoad, when } from "../ui.tsx";

const STATUSES = ["", "pending", "verified", "failed", "expired", "revoked"];
const TYPES = ["", "email", "phone", "domain", "wallet", "social", "account", "telegram_bot"];

/**
 * Find by identifier: typed in full, sent in a POST body (never in the page's URL), answered by the
 * verification service with the identifiers masked.
 */
function IdentifierSearch({ env }: { env: string }) {
  const identifier = useRef<HTMLInputElement>(null);
  const type = useRef<HTMLSelectElement>(null);
  const [found, setFound] = useState<{ page?: Page<Row>; error?: unknown }>({});
  const submit = async (e: Event) => {
    e.preventDefault();
    try {
      const t = type.current!.value;
      const page = await call<Page<Row>>("POST", `/${env}/search/verifications`, {
        identifier: identifier.current!.value.trim(),
        ...(t ? { type: t } : {}),
        limit: 50,
      });
      setFound({ page });
    } catch (error) {
      setFound({ error });
    }
  };
  const r = found.page;
  return (
    <div>
      <form class="bar" aria-label="Find by identifier" onSubmit={submit}>
        <label>
          Identifier
          <input ref={identifier} name="identifier" autocomplete="off" aria-label="Identifier" placeholder="jo@example.com, +370…" />
        </label>
        <label>
          Type
          <select ref={type} name="type" aria-label="Type">
            {TYPES.map((t) => (
              <option value={t}>{t || "any type"}</option>
            ))}
          </select>
        </label>
        <button type="submit">Find</button>
      </form>
      <div aria-live="polite">
        {found.error ? <Failure error={found.error} /> : undefined}
        {r ? (
          <>
            <h2>{`Found ${r.pagination.total} by identifier`}</h2>
            {r.data.length ? (
              <Table head={["Id", "Type / channel", "Status", "Identifier", "Created"]} data-found="">
                {r.data.map((v) => (
                  <tr>
                    <td>
                      <Link href={`/console/${env}/verifications/${v.id}`}>{v.id}</Link>
                    </td>
                    <td>{`${v.type} / ${v.channel}`}</td>
                    <td class={`status-${v.status}`}>{String(v.status)}</td>
                    <td>{String(v.masked_identifier)}</td>
                    <td>{when(v.created_at)}</td>
                  </tr>
                ))}
              </Table>
            ) : (
              <p>No verification of this identifier.</p>
            )}
          </>
        ) : undefined}
      </div>
    </div>
  );
}

export function VerificationsPage({ env }: { env: string }) {
  const q = query();
  const params = new URLSearchParams({ limit: "20", page: q.get("page") ?? "1" });
  for (const k of ["status", "external_user_id"]) if (q.get(k)) params.set(k, q.get(k)!);
  const { data: r, error } = useLoad(() => call<Page<Row>>("GET", `/${env}/verifications?${params}`), `${env}?${params}`);
  const id = useRef<HTMLInputElement>(null);
  const user = useRef<HTMLInputElement>(null);
  const status = useRef<HTMLSelectElement>(null);
  const bar = (
    <form
      class="bar"
      aria-label="Search"
      onSubmit={(e) => {
        e.preventDefault();
        const wanted = id.current!.value.trim();
        if (wanted) return go(`/console/${env}/verifications/${encodeURIComponent(wanted)}`);
        const f = new URLSearchParams();
        if (status.current!.value) f.set("status", status.current!.value);
        if (user.current!.value.trim()) f.set("external_user_id", user.current!.value.trim());
        go(`/console/${env}/verifications${f.size ? `?${f}` : ""}`);
      }}
    >
      <label>
        Id
        <input ref={id} name="id" placeholder="ver_…" aria-label="Verification id" />
      </label>
      <label>
        External user id
        <input ref={user} name="external_user_id" value={q.get("external_user_id") ?? ""} aria-label="External user id" />
      </label>
      <label>
        Status
        <select ref={status} name="status" aria-label="Status">
          {STATUSES.map((s) => (
            <option value={s} selected={s === (q.get("status") ?? "")}>
              {s || "any status"}
            </option>
          ))}
        </select>
      </label>
      <button type="submit">Search</button>
    </form>
  );
  return (
    <Frame title="Verifications">
      {bar}
      <IdentifierSearch env={env} />
      {error ? <Failure error={error} /> : undefined}
      {r ? (
        <>
          <Table head={["Id", "Type / channel", "Status", "External user", "Created"]} wide={3}>
            {r.data.map((v) => (
              <tr>
                <td>
                  <Link href={`/console/${env}/verifications/${v.id}`}>{v.id}</Link>
                </td>
                <td>{`${v.type} / ${v.channel}`}</td>
                <td class={`status-${v.status}`}>{String(v.status)}</td>
                <td class="wide">{String(v.external_user_id ?? "")}</td>
                <td>{when(v.created_at)}</td>
              </tr>
            ))}
          </Table>
          {r.data.length ? (
            <Pager p={r.pagination} base={`/console/${env}/verifications${location.search.replace(/[?&]page=\d+/, "")}`} />
          ) : (
            <p>No verifications.</p>
          )}
        </>
      ) : undefined}
    </Frame>
  );
}
