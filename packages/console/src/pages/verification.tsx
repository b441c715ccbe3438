import { useRef, useState } from "preact/hooks";
import type { components } from "@icv/client/api";
import { call, canChange } from "../api.ts";
import { Failure, Frame, Link, useAction, useLoad, when } from "../ui.tsx";

/** The public API's verification, as the OpenAPI document (packages/client's generated types) describes it. */
type Verification = components["schemas"]["Verification"];
interface TimelineEvent {
  id: string;
  event_type: string;
  status: string | null;
  previous_status: string | null;
  reason: string | null;
  at: string | null;
}
const REASONS = ["user_request", "fraud", "key_compromise", "asset_transferred", "other"];

/** Validates the proof as POST /api/v1/proofs/validate does, optionally against an identifier. */
function Validate({ env, token, type }: { env: string; token: string; type: string }) {
  const against = useRef<HTMLInputElement>(null);
  const [out, act] = useAction();
  const submit = act(async () => {
    const identifier = against.current!.value.trim();
    const r = await call("POST", `/${env}/proofs/validate`, { proof_token: token, ...(identifier ? { identifier } : {}) });
    return (
      <p role="status" data-validation={r.valid ? "valid" : "invalid"}>
        {r.valid
          ? `Valid proof (${r.verification.type ?? type}, expires ${when(r.verification.expires_at)})`
          : `Not valid: ${r.reason}${r.message ? ` (${r.message})` : ""}`}
      </p>
    );
  });
  return (
    <>
      <form class="bar" onSubmit={submit}>
        <label>
          Identifier to compare (optional)
          <input ref={against} autocomplete="off" aria-label="Identifier to compare (optional)" />
        </label>
        <button type="submit" class="plain">
          Validate proof
        </button>
      </form>
      {out}
    </>
  );
}

export function VerificationPage({ env, id }: { env: string; id: string }) {
  const path = `/${env}/verifications/${encodeURIComponent(id)}`;
  const { data, error, reload } = useLoad(
    async () => ({
      v: await call<Verification>("GET", path),
      timeline: await call<{ data: TimelineEvent[] }>("GET", `${path}/timeline`).catch(() => ({ data: [] as TimelineEvent[] })),
    }),
    path,
  );
  const [reason, setReason] = useState(REASONS[0]);
  const [out, act] = useAction();
  const back = <Link href={`/console/${env}/verifications`}>← All verifications</Link>;
  if (error)
    return (
      <Frame title="Verification">
        <Failure error={error} />
        {back}
      </Frame>
    );
  if (!data) return <p>Loading…</p>;
  const { v, timeline } = data;
  const fields: [string, string][] = [
    ["Status", v.status],
    ["Type / channel", `${v.type} / ${v.channel}`],
    ["Identifier", v.identifier ?? "—"],
    ["External user", v.external_user_id ?? "—"],
    ["Created", when(v.created_at)],
    ["Verified", when(v.verified_at)],
    ["Revoked", v.revoked_at ? `${when(v.revoked_at)} (${v.revoked_reason})` : "—"],
    ["Proof expires", when(v.proof?.expires_at)],
  ];
  return (
    <Frame title={`Verification ${v.id}`}>
      <dl>
        {fields.map(([k, x]) => (
          <>
            <dt>{k}</dt>
            <dd data-field={k}>{x}</dd>
          </>
        ))}
      </dl>
      {v.status === "verified" && canChange() ? (
        <form
          class="bar"
          onSubmit={act(async () => {
            await call("POST", `/${env}/proofs/${v.id}/revoke`, { reason });
            await reload();
            return undefined;
          })}
        >
          <label>
            Reason
            <select aria-label="Reason" value={reason} onChange={(e) => setReason(e.currentTarget.value)}>
              {REASONS.map((x) => (
                <option value={x}>{x}</option>
              ))}
            </select>
          </label>
          <button type="submit" class="danger">
            Revoke proof
          </button>
        </form>
      ) : undefined}
      {out}
      {v.proof?.token ? <Validate env={env} token={v.proof.token} type={v.type} /> : undefined}
      <h2>Timeline</h2>
      <ol class="timeline">
        {timeline.data.map((e) => (
          <li>
            <time dateTime={e.at ?? undefined}>{when(e.at)}</time>{" "}
            {`${e.previous_status ? `${e.previous_status} → ` : ""}${e.status ?? ""} (${e.event_type}${e.reason ? `: ${e.reason}` : ""})`}
          </li>
        ))}
      </ol>
      {back}
    </Frame>
  );
}
