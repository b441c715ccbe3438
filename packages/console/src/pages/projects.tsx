import { useEffect, useRef, useState } from "preact/hooks";
import type { components } from "@icv/client/api";
import { call, canChange } from "../api.ts";
import { Failure, Frame, go, Link, useAction, useLoad, when } from "../ui.tsx";
import { ListPage } from "./lists.tsx";

/** The public API's project, as the OpenAPI document (packages/client's generated types) describes it. */
type Project = components["schemas"]["Project"];
type Template = components["schemas"]["MessageTemplate"];

/** The environment's projects: each one's templates and branding; a developer or admin adds one. */
export function ProjectsPage({ env }: { env: string }) {
  const name = useRef<HTMLInputElement>(null);
  const [out, act] = useAction();
  const add = act(async () => {
    const p = await call("POST", `/${env}/projects`, { name: name.current!.value.trim() });
    go(`/console/${env}/projects/${p.id}/branding`);
    return undefined;
  });
  return (
    <ListPage
      title={`Projects (${env})`}
      env={env}
      path="projects"
      section="projects"
      columns={[
        ["Name", (p) => <Link href={`/console/${env}/projects/${p.id}`}>{String(p.name)}</Link>],
        ["Branding", (p) => <Link href={`/console/${env}/projects/${p.id}/branding`}>Branding</Link>],
        ["Id", (p) => p.id],
        ["Created", (p) => when(p.created_at)],
      ]}
    >
      {canChange() ? (
        <form class="bar" onSubmit={add}>
          <label>
            Project name
            <input ref={name} aria-label="Project name" required maxLength={100} />
          </label>
          <button type="submit">Add a project</button>
        </form>
      ) : undefined}
      {out}
    </ListPage>
  );
}

const FIELDS = [
  ["business_name", "Business name", { maxLength: 100 }],
  ["logo_url", "Logo URL", { type: "url", maxLength: 2048, placeholder: "https://…" }],
  ["primary_color", "Primary colour", { maxLength: 7, placeholder: "#0a58ca" }],
  ["support_email", "Support email", { type: "email", maxLength: 254 }],
] as const;
type Field = (typeof FIELDS)[number][0];

/** A project's branding: the form, and a preview of the hosted page's header that follows every keystroke. */
export function BrandingPage({ env, id }: { env: string; id: string }) {
  const base = `/${env}/projects/${encodeURIComponent(id)}`;
  const { data: p, error } = useLoad(() => call<Project>("GET", base), base);
  const [values, setValues] = useState<Record<Field, string>>();
  const [out, act] = useAction();
  useEffect(() => {
    if (p) setValues(Object.fromEntries(FIELDS.map(([k]) => [k, p.branding[k] ?? ""])) as Record<Field, string>);
  }, [p]);
  const button = useRef<HTMLSpanElement>(null);
  const preview = useRef<HTMLDivElement>(null);
  const color = values && /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.test(values.primary_color) ? values.primary_color : "#0a58ca";
  useEffect(() => {
    // CSSOM, not a style attribute: the strict CSP allows it
    if (button.current) button.current.style.backgroundColor = color;
    if (preview.current) preview.current.style.borderTopColor = color;
  });
  const back = <Link href={`/console/${env}/projects`}>← All projects</Link>;
  if (error)
    return (
      <Frame title="Branding">
        <Failure error={error} />
        {back}
      </Frame>
    );
  if (!p || !values) return <p>Loading…</p>;
  const change = canChange();
  const save = act(async () => {
    await call("PATCH", base, { branding: Object.fromEntries(FIELDS.map(([k]) => [k, values[k].trim() || null])) });
    return <p role="status">Saved.</p>;
  });
  return (
    <Frame title={`Branding of ${p.name}`}>
      <form class="stack" onSubmit={save}>
        {FIELDS.map(([k, label, attrs]) => (
          <label>
            {label}
            <input
              {...attrs}
              name={k}
              aria-label={label}
              value={values[k]}
              disabled={!change}
              onInput={(e) => setValues({ ...values, [k]: e.currentTarget.value })}
            />
          </label>
        ))}
        {change ? <button type="submit">Save branding</button> : undefined}
      </form>
      {out}
      <h2>Preview</h2>
      {/* biome-ignore lint/a11y/useSemanticElements: a picture of the hosted page, not a set of form controls */}
      <div class="branding-preview" role="group" aria-label="Preview of the hosted page" ref={preview}>
        {p.branding.logo_url ? <img src={`/hosted/logo/${p.id}`} alt="" class="preview-logo" /> : undefined}
        <strong data-preview="name">{values.business_name || p.name}</strong>
        <p>Confirm your email address to continue.</p>
        <span class="preview-button" data-preview="button" ref={button}>
          Verify
        </span>
        <small data-preview="support">{values.support_email ? `Help: ${values.support_email}` : ""}</small>
      </div>
      <p>
        <Link href={`/console/${env}/projects/${p.id}`}>Message templates</Link>
        {" · "}
        {back}
      </p>
    </Frame>
  );
}

// the public API's enums (the OpenAPI document's, from @icv/platform's vocabulary), spelled out for
// the browser bundle; `every` makes a value the API adds or drops fail to compile here
const every =
  <T extends string>() =>
  <const A extends readonly T[]>(values: A & ([Exclude<T, A[number]>] extends [never] ? unknown : { missing: Exclude<T, A[number]> })): readonly string[] =>
    values;
const CHANNELS = every<Template["channel"]>()(["email", "sms", "whatsapp", "telegram"]);
const TYPES = every<Template["type"]>()([
  "verification_request",
  "verification_success",
  "verification_expired",
  "login_request",
  "login_success",
  "2fa_request",
  "2fa_success",
]);

/** One project's message templates: pick a channel and type, edit, preview with sample values, save. */
export function TemplatesPage({ env, id }: { env: string; id: string }) {
  const base = `/${env}/projects/${encodeURIComponent(id)}/templates`;
  const [channel, setChannel] = useState(CHANNELS[0]);
  const [type, setType] = useState(TYPES[0]);
  const [subject, setSubject] = useState("");
  const [body, setBody] = useState("");
  const [preview, setPreview] = useState<preact.ComponentChildren>(null);
  const [out, act] = useAction();
  const { data: t, error } = useLoad(() => call<Template>("GET", `${base}/${channel}/${type}`), `${base}/${channel}/${type}`);
  useEffect(() => {
    if (!t) return;
    setBody(t.body);
    setSubject(t.subject ?? "");
    setPreview(null);
  }, [t]);
  const withSubject = () => (channel === "email" && subject ? { subject } : {});
  const showPreview = async () => {
    try {
      const r = await call<components["schemas"]["RenderedMessage"]>("POST", `${base}/preview`, { channel, type, body, ...withSubject() });
      setPreview(
        <>
          <h2>Preview</h2>
          {r.subject ? (
            <p>
              <strong>{r.subject}</strong>
            </p>
          ) : undefined}
          <pre data-preview="">{r.body}</pre>
        </>,
      );
    } catch (e) {
      setPreview(<Failure error={e} />);
    }
  };
  const save = act(async () => {
    await call("PUT", `${base}/${channel}/${type}`, { body, ...withSubject() });
    return <p role="status">Saved.</p>;
  });
  return (
    <Frame title="Message templates">
      <form class="bar" onSubmit={(e) => e.preventDefault()}>
        <label>
          Channel
          <select aria-label="Channel" value={channel} onChange={(e) => setChannel(e.currentTarget.value)}>
            {CHANNELS.map((x) => (
              <option value={x}>{x}</option>
            ))}
          </select>
        </label>
        <label>
          Message
          <select aria-label="Message" value={type} onChange={(e) => setType(e.currentTarget.value)}>
            {TYPES.map((x) => (
              <option value={x}>{x}</option>
            ))}
          </select>
        </label>
      </form>
      <p>
        <label>
          Subject (email)
          <input aria-label="Subject" size={50} value={subject} disabled={channel !== "email"} onInput={(e) => setSubject(e.currentTarget.value)} />
        </label>
      </p>
      <p>
        <label>
          Text
          <textarea aria-label="Template text" rows={6} cols={60} value={body} onInput={(e) => setBody(e.currentTarget.value)} />
        </label>
      </p>
      <div class="bar">
        <button type="button" class="plain" onClick={showPreview}>
          Preview
        </button>
        {canChange() ? (
          <button type="button" onClick={save}>
            Save
          </button>
        ) : undefined}
      </div>
      {error ? <Failure error={error} /> : undefined}
      {t ? <p>{t.custom === false ? "The built-in text (no template of this project yet)." : "This project's template."}</p> : undefined}
      {out}
      <div aria-live="polite" class="preview">
        {preview}
      </div>
      <Link href={`/console/${env}/projects`}>← All projects</Link>
    </Frame>
  );
}
