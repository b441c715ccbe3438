// waitForCompletion: until a verification leaves `pending`, by its event stream
// (GET /api/v1/verifications/{id}/events, docs/events-and-webhooks.md) and, when the stream cannot
// be opened or breaks off (a proxy that buffers it, the per-tenant stream cap's 429, a network
// error), by polling GET /api/v1/verifications/{id}. It answers the verification as GET shows it.
import type { components } from "@icv/client/api";
import { sleep, type FetchLike } from "./retry.ts";

export type Verification = components["schemas"]["Verification"];

export interface WaitOptions {
  /** Give up after this long (default 10 minutes): WaitTimeoutError. */
  timeoutMs?: number;
  /** Between two polls (default 2 s). */
  pollIntervalMs?: number;
  /** "auto" (default): the stream, then polling; "poll": polling only. */
  transport?: "auto" | "poll";
  signal?: AbortSignal;
}

export class WaitTimeoutError extends Error {
  override readonly name = "WaitTimeoutError";
}

/** An error answer of the API: `{error: {code, message, request_id}}` and its status. */
export class IcvApiError extends Error {
  override readonly name = "IcvApiError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId?: string,
    readonly retryAfter?: number,
  ) {
    super(`${status} ${code}: ${message}`);
  }

  static async from(res: Response): Promise<IcvApiError> {
    const body = (await res.json().catch(() => undefined)) as
      | { error?: { code?: string; message?: string; request_id?: string; retry_after?: number } }
      | undefined;
    const e = body?.error;
    return new IcvApiError(res.status, e?.code ?? `http_${res.status}`, e?.message ?? res.statusText, e?.request_id, e?.retry_after);
  }
}

export interface WaitContext {
  baseUrl: string;
  headers: () => Record<string, string>;
  /** The client's fetch (with retries), for polls. */
  fetch: FetchLike;
  /** The plain fetch, for the stream (a refused stream falls back to polling, it is not retried). */
  streamFetch: FetchLike;
}

const done = (status: unknown) => typeof status === "string" && status !== "pending";

/** The `data` of each event of a text/event-stream body, with its event name. */
async function* events(body: ReadableStream<Uint8Array>): AsyncGenerator<{ event: string; data: string }> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done: end } = await reader.read();
    if (end) return;
    buffer += decoder.decode(value, { stream: true });
    let cut: RegExpExecArray | null;
    while ((cut = /\r\n\r\n|\n\n|\r\r/.exec(buffer))) {
      const block = buffer.slice(0, cut.index);
      buffer = buffer.slice(cut.index + cut[0].length);
      let event = "message";
      const data: string[] = [];
      for (const line of block.split(/\r\n|\n|\r/)) {
        if (line.startsWith(":")) continue;
        const i = line.indexOf(":");
        const field = i < 0 ? line : line.slice(0, i);
        const v = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
        if (field === "event") event = v;
        else if (field === "data") data.push(v);
      }
      if (data.length) yield { event, data: data.join("\n") };
    }
  }
}

/** True once the stream told a status other than pending; false when it could not tell (fall back). */
async function viaStream(ctx: WaitContext, id: string, signal: AbortSignal): Promise<boolean> {
  let res: Response;
  try {
    res = await ctx.streamFetch(
      new Request(`${ctx.baseUrl}/api/v1/verifications/${encodeURIComponent(id)}/events`, {
        headers: { ...ctx.headers(), accept: "text/event-stream" },
        signal,
      }),
    );
  } catch (e) {
    if (signal.aborted) throw e;
    return false;
  }
  // not found, not authorised: polling would answer the same, so say it now
  if ([400, 401, 403, 404].includes(res.status)) throw await IcvApiError.from(res);
  if (res.status !== 200 || !res.body || !res.headers.get("content-type")?.startsWith("text/event-stream")) {
    await res.body?.cancel();
    return false;
  }
  try {
    for await (const e of events(res.body)) {
      if (e.event !== "connected" && e.event !== "status_changed") continue;
      const status = (JSON.parse(e.data) as { status?: unknown }).status;
      if (done(status)) return true;
    }
  } catch (e) {
    if (signal.aborted) throw e;
  } finally {
    await res.body.cancel().catch(() => {});
  }
  return false;
}

async function read(ctx: WaitContext, id: string, signal: AbortSignal): Promise<Verification> {
  const res = await ctx.fetch(new Request(`${ctx.baseUrl}/api/v1/verifications/${encodeURIComponent(id)}`, { headers: ctx.headers(), signal }));
  if (!res.ok) throw await IcvApiError.from(res);
  return (await res.json()) as Verification;
}

/** The verification once its status is no longer `pending` (verified, failed, expired, …). */
export async function waitForCompletion(ctx: WaitContext, id: string, opts: WaitOptions = {}): Promise<Verification> {
  const timeoutMs = opts.timeoutMs ?? 600_000;
  const timer = new AbortController();
  const t = setTimeout(() => timer.abort(new WaitTimeoutError(`verification ${id} still pending after ${timeoutMs} ms`)), timeoutMs);
  const signal = opts.signal ? AbortSignal.any([opts.signal, timer.signal]) : timer.signal;
  try {
    if (opts.transport !== "poll" && (await viaStream(ctx, id, signal))) return await read(ctx, id, signal);
    for (;;) {
      const v = await read(ctx, id, signal);
      if (done(v.status)) return v;
      await sleep(opts.pollIntervalMs ?? 2000, signal);
    }
  } catch (e) {
    throw signal.aborted ? signal.reason : e;
  } finally {
    clearTimeout(t);
  }
}
