import { useRef, useState } from "preact/hooks";
import type { ComponentChildren } from "preact";
import { call, canChange, type Page, type Row } from "../api.ts";
import { Failure, Frame, go, Pager, query, Table, useLoad, when } from "../ui.tsx";

interface Endpoint {
  url: string | null;
  secret_created_at: string | null;
  previous_secret_expires_at: string | null;
  failing_since: string | null;
  disabled_at: string | null;
  disabled_reason: string | null;
}

export function WebhookPage({ env }: { env: string }) {
  const { data: w, error, reload } = useLoad(() => call<Endpoint>("GET", `/${env}/webhook`), env);
  const url = useRef<HTMLInputElement>(null);
  const [note, setNote] = useState<string>();
  const [out, setOut] = useState<ComponentChildren>(null);
  const act = (fn: () => Promise<void>) => async (e?: Event) => {
    e?.preventDefault();
    try {
      await fn();
    } catch (err) {
      setOut(<Failure error={err} />);
    }
  };
  if (error)
    return (
      <Frame title="Webhook endpoint">
        <Failure error={error} />
      </Frame>
    );
  if (!w) return <p>Loading…</p>;
  const fields: [string, string][] = [
    ["URL", w.url ?? "not set"],
    ["Secret made", when(w.secret_created_at)],
    ["Previous secret signs until", when(w.previous_secret_expires_at)],
    ["Failing since", when(w.failing_since)],
    ["Disabled", w.disabled_at ? `${when(w.disabled_at)} (${w.disabled_reason ?? ""})` : "—"],
  ];
  const change = canChange();
  return (
    <Frame title={`Webhook endpoint (${env})`}>
      <dl>
        {fields.map(([k, x]) => (
          <>
            <dt>{k}</dt>
            <dd data-field={k}>{x}</dd>
          </>
        ))}
      </dl>
      {change ? (
        <form
          class="bar"
          onSubmit={act(async () => {
            await call("PUT", `/${env}/webhook`, { url: url.current!.value });
            await reload();
            setNote("Saved.");
          })}
        >
          <label>
            Endpoint URL
            <input ref={url} type="url" value={w.url ?? ""} aria-label="Endpoint URL" size={40} required />
          </label>
          <button type="submit">Save</button>
        </form>
      ) : undefined}
      {change && w.url ? (
        <button
          type="button"
          class="plain"
          onClick={act(async () => {
            const r = await call("POST", `/${env}/webhook/test`);
            setOut(<p role="status">{`Test event sent: delivery ${r.delivery_id} (see Deliveries).`}</p>);
          })}
        >
          Send a test event
        </button>
      ) : undefined}
      {change && w.disabled_at ? (
        <button
          type="button"
          onClick={act(async () => {
            await call("POST", `/${env}/webhook/enable`);
            await reload();
            setNote("Enabled.");
          })}
        >
          Enable
        </button>
      ) : undefined}
      {change ? (
        <button
          type="button"
          class="plain"
          onClick={act(async () => {
            const r = await call("POST", `/${env}/webhook/rotate-secret`);
            await reload();
            setOut(
              <div class="once">
                <p>The new signing secret, shown only now (the previous one signs alongside it for 24 h):</p>
                <code data-secret="">{r.secret}</code>
              </div>,
            );
          })}
        >
          Rotate the secret
        </button>
      ) : undefined}
      {note ? <p role="status">{note}</p> : undefined}
      <div aria-live="polite">{out}</div>
    </Frame>
  );
}

export function DeliveriesPage({ env }: { env: string }) {
  const q = query();
  const params = new URLSearchParams({ limit: "20", page: q.get("page") ?? "1" });
  if (q.get("status")) params.set("status", q.get("status")!);
  const { data: r, error, reload } = useLoad(() => call<Page<Row>>("GET", `/${env}/webhook-deliveries?${params}`), `${env}?${params}`);
  const status = useRef<HTMLSelectElement>(null);
  const [out, setOut] = useState<ComponentChildren>(null);
  const bar = (
    <form
      class="bar"
      onSubmit={(e) => {
        e.preventDefault();
        go(`/console/${env}/deliveries${status.current!.value ? `?status=${status.current!.value}` : ""}`);
      }}
    >
      <label>
        Status
        <select ref={status} name="status" aria-label="Status">
          {["", "pending", "delivered", "failed"].map((s) => (
            <option value={s} selected={s === (q.get("status") ?? "")}>
              {s || "any status"}
            </option>
          ))}
        </select>
      </label>
      <button type="submit">Filter</button>
    </form>
  );
  const retry = (id: string) => async () => {
    try {
      await call("POST", `/${env}/webhook-deliveries/${id}/retry`);
      await reload();
    } catch (e) {
      setOut(<Failure error={e} />);
    }
  };
  return (
    <Frame title="Webhook deliveries">
      {bar}
      <div aria-live="polite">{out}</div>
      {error ? <Failure error={error} /> : undefined}
      {r ? (
        <>
          <Table head={["Event", "Status", "Attempts", "Response", "Created", ""]}>
            {r.data.map((d) => (
              <tr>
                <td>
                  {String(d.event_type)}
                  <br />
                  <small>{d.id}</small>
                </td>
                <td class={`status-${d.status}`}>{String(d.status)}</td>
                <td>{`${d.attempts}/${d.max_attempts}`}</td>
                <td>{String(d.response_status ?? "—")}</td>
                <td>{when(d.created_at)}</td>
                <td>
                  {canChange() && d.status === "failed" ? (
                    <button type="button" aria-label={`Retry ${d.id}`} onClick={retry(d.id)}>
                      Retry
                    </button>
                  ) : (
                    ""
                  )}
                </td>
              </tr>
            ))}
          </Table>
          {r.data.length ? <Pager p={r.pagination} base={`/console/${env}/deliveries${location.search.replace(/[?&]page=\d+/, "")}`} /> : <p>No deliveries.</p>}
        </>
      ) : undefined}
    </Frame>
  );
}
