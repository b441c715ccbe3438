// The console's client of /console/api/: the session's CSRF token on every change, the API's error
// shape turned into an Error with its status and code.
export interface Me {
  user: { id: string; email: string; role: "admin" | "developer" | "viewer" };
  tenant: { id: string; name: string | null };
  csrf_token: string;
}
export interface Pagination {
  page: number;
  limit: number;
  total: number;
  pages: number;
  hasMore: boolean;
}
export interface Page<T> {
  data: T[];
  pagination: Pagination;
}
export type Row = Record<string, unknown> & { id: string };

export const session: { me?: Me; csrf: string } = { csrf: "" };

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code?: string,
  ) {
    super(message);
  }
}

// biome-ignore lint/suspicious/noExplicitAny: the answers are read as the API documents them
export async function call<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`/console/api${path}`, {
    method,
    credentials: "same-origin",
    headers: {
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
      ...(method !== "GET" && session.csrf ? { "x-csrf-token": session.csrf } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = res.status === 204 ? undefined : await res.json().catch(() => undefined);
  if (!res.ok) throw new ApiError(data?.error?.message ?? `HTTP ${res.status}`, res.status, data?.error?.code);
  return data as T;
}

export async function loadMe(): Promise<Me> {
  const me = await call<Me>("GET", "/me");
  session.me = me;
  session.csrf = me.csrf_token;
  return me;
}

export const canChange = () => session.me?.user.role !== "viewer";
export const isAdmin = () => session.me?.user.role === "admin";
