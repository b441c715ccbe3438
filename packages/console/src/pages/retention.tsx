// The environment's retention (docs/privacy.md, "Retention"): shown to everyone, set by an admin or
// a developer. The API checks the value (1 to 3650 days); its validation_error is shown as it comes.
import { useRef } from "preact/hooks";
import { ApiError, call, canChange } from "../api.ts";
import { Failure, Frame, useAction, useLoad } from "../ui.tsx";

interface Retention {
  retention_days: number | null;
}

/** A typed whole number goes as a number; anything else as typed, for the API to refuse (never as null, which clears it). */
const typed = (v: string) => (/^-?\d{1,9}$/.test(v.trim()) ? Number(v.trim()) : v);

export function RetentionPage({ env }: { env: string }) {
  const { data, error, reload } = useLoad(() => call<Retention>("GET", `/${env}/retention`), env);
  const days = useRef<HTMLInputElement>(null);
  const [out, act] = useAction();
  if (error)
    return (
      <Frame title="Data retention">
        <Failure error={error} />
      </Frame>
    );
  if (!data) return <p>Loading…</p>;
  const save = (value: unknown, note: string) =>
    act(async () => {
      try {
        await call("PUT", `/${env}/retention`, { retention_days: value });
      } catch (e) {
        if (e instanceof ApiError && e.code === "validation_error") throw new Error(`Retention must be a whole number of days from 1 to 3650 (${e.code}).`);
        throw e;
      }
      await reload();
      return <p role="status">{note}</p>;
    });
  const change = canChange();
  return (
    <Frame title={`Data retention (${env})`}>
      <p>
        Settled verifications created more than this many days ago have their personal data erased, as a redaction does: identifier, client_metadata, test
        messages and the stored SD-JWT VC. Pending verifications are never touched.
      </p>
      <dl>
        <dt>Retention</dt>
        <dd data-field="retention">{data.retention_days ? `${data.retention_days} days` : "Kept until redacted"}</dd>
      </dl>
      {change ? (
        <form class="bar" noValidate onSubmit={(e) => save(typed(days.current!.value), "Saved.")(e)}>
          <label>
            Retention in days (1 to 3650)
            <input ref={days} type="number" min={1} max={3650} step={1} value={data.retention_days ?? ""} inputMode="numeric" required />
          </label>
          <button type="submit">Save retention</button>
        </form>
      ) : undefined}
      {change && data.retention_days ? (
        <button type="button" class="plain" onClick={save(null, "Verifications are kept until redacted.")}>
          Keep until redacted
        </button>
      ) : undefined}
      {out}
    </Frame>
  );
}
