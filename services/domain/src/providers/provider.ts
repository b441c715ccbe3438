/**
 * A DNS host's API as channel `auto` uses it: write one TXT record, remove it again. One file
 * per host beside this one; index.ts is the registry. Credentials live only in the client object
 * of one call chain: never stored, never logged, never put in a URL or an error message.
 */

/** What the removal needs: the zone the record went into and the host's id for it. */
export interface WrittenRecord {
  zone: string;
  /** The record's full name (`_icv-challenge.example.com`). */
  name: string;
  value: string;
  /** The host's record id, when it gives one. */
  id?: string;
}

export interface DnsHostClient {
  /** Writes TXT `value` at `name` in the account's zone enclosing `domain`. */
  write(domain: string, name: string, value: string): Promise<WrittenRecord>;
  /** Removes exactly that record (other values at the name stay). */
  remove(record: WrittenRecord): Promise<void>;
}

export interface DnsHostDefinition {
  key: string;
  /** The display name (`Cloudflare`). */
  name: string;
  /** The credential fields the host needs, as the create body names them. */
  credentials: readonly string[];
  client(baseUrl: string, credentials: Readonly<Record<string, string>>): DnsHostClient;
}

export type ProviderErrorKind = "credentials" | "zone" | "api";

/** A host API refusal, its message fit to show the user (never a credential in it). */
export class ProviderError extends Error {
  constructor(
    readonly kind: ProviderErrorKind,
    message: string,
  ) {
    super(message);
    this.name = "ProviderError";
  }
}

/** The zones that may hold `domain`'s records, longest first: the domain, then its parents down to two labels. */
export function zoneCandidates(domain: string): string[] {
  const labels = domain.split(".");
  return labels.slice(0, -1).map((_, i) => labels.slice(i).join("."));
}

/** `name` relative to `zone` (`@` at the apex), as most host APIs name records. */
export const relativeName = (name: string, zone: string) => (name === zone ? "@" : name.slice(0, -(zone.length + 1)));

export interface ApiResponse {
  status: number;
  text: string;
}

const API_TIMEOUT_MS = 10_000;

/** One call to a host API (10 s); a network failure is a ProviderError naming the host, not the request. */
export async function callApi(hostName: string, url: string, init: { method: string; headers: Record<string, string>; body?: string }): Promise<ApiResponse> {
  let res: Response;
  try {
    res = await fetch(url, { ...init, redirect: "error", signal: AbortSignal.timeout(API_TIMEOUT_MS) });
  } catch (e) {
    const cause = (e as { cause?: { code?: string } }).cause?.code ?? (e as Error).name;
    throw new ProviderError("api", `could not reach the ${hostName} API (${cause === "TimeoutError" ? `no answer in ${API_TIMEOUT_MS / 1000} s` : cause})`);
  }
  return { status: res.status, text: await res.text() };
}

/** Parses a JSON body, or undefined. */
export function jsonOf<T>(text: string): T | undefined {
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}

/** A short, single-line excerpt of an API's error text for a message. */
export const excerpt = (text: string) => text.replace(/\s+/g, " ").trim().slice(0, 200);
