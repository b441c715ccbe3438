import type { components } from "@icv/client/api";
import { call, type Page } from "../api.ts";
import { Failure, Frame, Link, Pager, pageOf, Table, useLoad, when } from "../ui.tsx";

/** The public API's profile, as the OpenAPI document (packages/client's generated types) describes it. */
type Profile = components["schemas"]["Profile"];

/** The profiles made through the API: a page at a time, each with the proofs it shows. */
export function ProfilesPage({ env }: { env: string }) {
  const url = `/${env}/profiles?limit=20&page=${pageOf()}`;
  const { data: r, error } = useLoad(() => call<Page<Profile>>("GET", url), url);
  return (
    <Frame title={`Profiles (${env})`}>
      {error ? <Failure error={error} /> : undefined}
      {r?.data.length ? (
        <>
          <Table head={["Name", "Public", "Proofs", "Updated"]}>
            {r.data.map((p) => (
              <tr>
                <td>
                  <Link href={`/console/${env}/profiles/${p.id}`}>{p.display_name}</Link>
                </td>
                <td>{p.is_public ? "yes" : "no"}</td>
                <td>{String(p.proofs.length)}</td>
                <td>{when(p.updated_at)}</td>
              </tr>
            ))}
          </Table>
          <Pager p={r.pagination} base={`/console/${env}/profiles`} />
        </>
      ) : r ? (
        <p>No profiles yet.</p>
      ) : undefined}
    </Frame>
  );
}

export function ProfilePage({ env, id }: { env: string; id: string }) {
  const path = `/${env}/profiles/${encodeURIComponent(id)}`;
  const { data: p, error } = useLoad(() => call<Profile>("GET", path), path);
  const back = <Link href={`/console/${env}/profiles`}>← All profiles</Link>;
  if (error)
    return (
      <Frame title="Profile">
        <Failure error={error} />
        {back}
      </Frame>
    );
  if (!p) return <p>Loading…</p>;
  const fields: [string, string][] = [
    ["Id", p.id],
    ["Public", p.is_public ? "yes" : "no"],
    ["Bio", p.bio ?? "—"],
  ];
  return (
    <Frame title={`Profile ${p.display_name}`}>
      <dl>
        {fields.map(([k, x]) => (
          <>
            <dt>{k}</dt>
            <dd data-field={k}>{x}</dd>
          </>
        ))}
      </dl>
      <h2>Proofs shown</h2>
      <Table head={["Verification", "Label", "Identifier shown"]}>
        {p.proofs.map((x) => (
          <tr>
            <td>
              <Link href={`/console/${env}/verifications/${x.verification_id}`}>{x.verification_id}</Link>
            </td>
            <td>{x.label || "—"}</td>
            <td>{x.mask_level}</td>
          </tr>
        ))}
      </Table>
      {p.is_public ? (
        <p>
          <a href={p.public_url} rel="noreferrer" target="_blank">
            Open the public page
          </a>
        </p>
      ) : undefined}
      {back}
    </Frame>
  );
}
