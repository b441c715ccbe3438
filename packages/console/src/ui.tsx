// What every page shares: navigation without reloads, links, the page frame (title and focus),
// errors, dates, tables, the pager and a loader hook.
import type { ComponentChildren, JSX } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { Pagination } from "./api.ts";

const listeners = new Set<() => void>();
export function go(path: string): void {
  history.pushState(null, "", path);
  for (const l of listeners) l();
}
/** The current location; re-renders on go() and on the browser's back and forward. */
export function useLocation(): string {
  const [at, setAt] = useState(location.pathname + location.search);
  useEffect(() => {
    const update = () => setAt(location.pathname + location.search);
    listeners.add(update);
    window.addEventListener("popstate", update);
    return () => {
      listeners.delete(update);
      window.removeEventListener("popstate", update);
    };
  }, []);
  return at;
}

export function Link({
  href,
  children,
  current,
  ...rest
}: { href: string; children: ComponentChildren; current?: boolean } & JSX.HTMLAttributes<HTMLAnchorElement>) {
  return (
    <a
      {...rest}
      href={href}
      aria-current={current ? "page" : undefined}
      onClick={(e) => {
        e.preventDefault();
        go(href);
      }}
    >
      {children}
    </a>
  );
}

/** A page: its heading, the document's title, and the focus moved to the content when it changes. */
export function Frame({ title, children }: { title: string; children?: ComponentChildren }) {
  useEffect(() => {
    document.title = `${title} · ICV console`;
    document.getElementById("main")?.focus();
  }, [title]);
  return (
    <>
      <h1>{title}</h1>
      {children}
    </>
  );
}

export const Failure = ({ error }: { error: unknown }) => (
  <p class="error" role="alert">
    {error instanceof Error ? error.message : String(error)}
  </p>
);

export const when = (t: unknown) => (t ? new Date(String(t)).toLocaleString() : "—");

export function Table({
  head,
  children,
  wide,
  ...rest
}: { head: string[]; children: ComponentChildren; wide?: number } & JSX.HTMLAttributes<HTMLTableElement>) {
  return (
    <table {...rest}>
      <thead>
        <tr>
          {head.map((t, i) => (
            <th scope="col" class={i === wide ? "wide" : undefined}>
              {t}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  );
}

export function Pager({ p, base }: { p: Pagination; base: string }) {
  const at = (n: number) => `${base}${base.includes("?") ? "&" : "?"}page=${n}`;
  return (
    <div class="pager">
      {p.page > 1 ? <Link href={at(p.page - 1)}>← Newer</Link> : undefined}
      <span>{`Page ${p.page} of ${Math.max(p.pages, 1)} (${p.total})`}</span>
      {p.hasMore ? <Link href={at(p.page + 1)}>Older →</Link> : undefined}
    </div>
  );
}

/** Loads with `load` whenever `key` changes: the data, the error, and a reload. */
export function useLoad<T>(load: () => Promise<T>, key: string): { data?: T; error?: unknown; reload: () => Promise<void> } {
  const [state, setState] = useState<{ data?: T; error?: unknown; key?: string }>({});
  const loader = useRef(load);
  loader.current = load;
  const reload = useCallback(async () => {
    try {
      const data = await loader.current();
      setState({ data, key });
    } catch (error) {
      setState({ error, key });
    }
  }, [key]);
  useEffect(() => {
    void reload();
  }, [reload]);
  // what another key loaded is not shown under this one
  return state.key === key ? { data: state.data, error: state.error, reload } : { reload };
}

/** Runs an action of a button or form, showing its error (or its note) in the page. */
export function useAction(): [ComponentChildren, (fn: () => Promise<ComponentChildren | undefined>) => (e?: Event) => Promise<void>] {
  const [out, setOut] = useState<ComponentChildren>(null);
  const act = (fn: () => Promise<ComponentChildren | undefined>) => async (e?: Event) => {
    e?.preventDefault();
    try {
      setOut((await fn()) ?? null);
    } catch (err) {
      setOut(<Failure error={err} />);
    }
  };
  return [<div aria-live="polite">{out}</div>, act];
}

export const query = () => new URLSearchParams(location.search);
export const pageOf = () => Number(query().get("page") ?? 1) || 1;
