// Assertions for what a tenant sees when a call fails, and small waiting helpers for e2e tests.
import { expect } from "vitest";

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/**
 * The spec's error shape: the given HTTP status and `error.code`, a message, `error.request_id`
 * equal to the `X-Request-Id` header, a JSON content type, and nothing that looks like an HTML
 * page or a stack trace.
 */
export function expectError(res: ApiResponse, status: number, code: string): any {
  const context = `${status} ${code}, got ${res.status}: ${res.text.slice(0, 300)}`;
  expect(res.status, context).toBe(status);
  expect(res.headers.get("content-type") ?? "", context).toMatch(/^application\/json/);
  expect(res.body?.error?.code, context).toBe(code);
  expect(typeof res.body.error.message, context).toBe("string");
  expect(res.body.error.message.length, context).toBeGreaterThan(0);
  const rid = res.headers.get("x-request-id");
  expect(rid, context).toBeTruthy();
  expect(res.body.error.request_id, context).toBe(rid);
  expect(res.text, context).not.toMatch(/<html|<!doctype|<pre>/i);
  expect(res.text, context).not.toMatch(/\bat \S+ \(|node_modules|\.ts:\d+/);
  return res.body.error;
}

/** Polls `probe` until it answers something truthy or `timeoutMs` passes; answers the last value. */
export async function waitFor<T>(probe: () => Promise<T>, timeoutMs: number, everyMs = 25): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v || Date.now() >= until) return v;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
