import type { ComponentChildren } from "preact";
import { call, type Page, type Row } from "../api.ts";
import { Failure, Frame, Link, Pager, pageOf, Table, useLoad, when } from "../ui.tsx";

/** A plain server-paged list of one route: its columns are [heading, (row) => cell]. */
export function ListPage({
  title,
  env,
  path,
  section,
  columns,
  children,
}: {
  title: string;
  env: string;
  path: string;
  section: string;
  columns: [string, (r: Row) => ComponentChildren][];
  children?: ComponentChildren;
}) {
  const url = `/${env}/${path}?limit=20&page=${pageOf()}`;
  const { data: r, error } = useLoad(() => call<Page<Row>>("GET", url), url);
  return (
    <Frame title={title}>
      {children}
      {error ? <Failure error={error} /> : undefined}
      {r ? (
        <>
          <Table head={columns.map(([t]) => t)}>
            {r.data.map((row) => (
              <tr>
                {columns.map(([, cell]) => (
                  <td>{cell(row)}</td>
                ))}
              </tr>
            ))}
          </Table>
          {r.data.length ? <Pager p={r.pagination} base={`/console/${env}/${section}`} /> : <p>Nothing yet.</p>}
        </>
      ) : undefined}
    </Frame>
  );
}

const s = (x: unknown) => (x === null || x === undefined ? "—" : String(x));

export const RequestsPage = ({ env }: { env: string }) => (
  <ListPage
    title="Verification requests"
    env={env}
    path="verification-requests"
    section="requests"
    columns={[
      ["Id", (r) => r.id],
      ["Status", (r) => s(r.status)],
      ["Reference", (r) => s(r.reference_id)],
      ["Assets", (r) => (r.assets as { type: string; status: string }[]).map((a) => `${a.type}: ${a.status}`).join(", ")],
      ["Created", (r) => when(r.created_at)],
      [
        "Hosted page",
        (r) =>
          r.status === "pending" || r.status === "partial" ? (
            <a href={String(r.verification_url)} rel="noreferrer" target="_blank">
              open
            </a>
          ) : (
            "—"
          ),
      ],
    ]}
  />
);

export const MessagesPage = ({ env }: { env: string }) => (
  <ListPage
    title={`Test messages (${env})`}
    env={env}
    path="test/messages"
    section="messages"
    columns={[
      ["When", (m) => when(m.created_at)],
      ["Channel", (m) => `${m.channel} (${m.direction})`],
      ["To", (m) => s(m.to)],
      [
        "Message",
        (m) => (
          <>
            {m.subject ? (
              <strong>
                {String(m.subject)}
                <br />
              </strong>
            ) : undefined}
            {String(m.text)}
          </>
        ),
      ],
      [
        "Verification",
        (m) => (m.verification_id ? <Link href={`/console/${env}/verifications/${m.verification_id}`}>{String(m.verification_id)}</Link> : s(m.session_id)),
      ],
    ]}
  />
);
