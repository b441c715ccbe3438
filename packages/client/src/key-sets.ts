// What an offline verifier fetches from the service, each cached for as long as the service says
// it may be: the issuer's metadata and the two key sets (24 h), the status lists and the signed
// revocation lists (5 min). Every document is fetched from the verifier's own base URL: a URI
// inside a token is only followed when it names the issuer's origin, and then at that base URL,
// so a forged token cannot make the verifier call anywhere else.
import type { FetchLike } from "./retry.ts";

export type Env = "live" | "test";
export interface Jwk {
  kid?: string;
  kty: string;
  n?: string;
  e?: string;
  alg?: string;
}

/** A value per key, loaded once per TTL; concurrent readers share one load; failures are not kept. */
export class TtlCache<T> {
  private entries = new Map<string, { at: number; value: Promise<T> }>();
  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  get(key: string, load: () => Promise<T>, maxAgeMs = this.ttlMs): Promise<T> {
    const hit = this.entries.get(key);
    if (hit && this.now() - hit.at < maxAgeMs) return hit.value;
    const value = load();
    this.entries.set(key, { at: this.now(), value });
    value.catch(() => {
      if (this.entries.get(key)?.value === value) this.entries.delete(key);
    });
    return value;
  }
}

export interface IssuerMetadata {
  issuer: string;
  jwks_uri: string;
}

export const DAY_MS = 86_400_000;
export const FIVE_MINUTES_MS = 300_000;
const STATUS_LISTS = "/api/v1/proofs/status-lists/";
/** A kid the cached set does not hold makes the set be fetched again, at most this often (key rotation). */
const REFRESH_FOR_UNKNOWN_KID_MS = 60_000;

export interface SourceOptions {
  baseUrl: string;
  fetch?: FetchLike;
  now?: () => number;
  jwksTtlMs?: number;
  statusTtlMs?: number;
}

/** The documents of one service (one base URL), with their caches. */
export class ServiceDocuments {
  readonly baseUrl: string;
  readonly now: () => number;
  private readonly fetcher: FetchLike;
  private readonly jwks: TtlCache<Jwk[]>;
  private readonly meta: TtlCache<IssuerMetadata>;
  private readonly lists: TtlCache<string>;
  private readonly revoked: TtlCache<string>;

  constructor(opts: SourceOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, "");
    this.now = opts.now ?? Date.now;
    this.fetcher = opts.fetch ?? ((input, init) => fetch(input, init));
    const jwksTtl = opts.jwksTtlMs ?? DAY_MS;
    const statusTtl = opts.statusTtlMs ?? FIVE_MINUTES_MS;
    this.jwks = new TtlCache(jwksTtl, this.now);
    this.meta = new TtlCache(jwksTtl, this.now);
    this.lists = new TtlCache(statusTtl, this.now);
    this.revoked = new TtlCache(statusTtl, this.now);
  }

  private async get(path: string, accept: string): Promise<Response> {
    const res = await this.fetcher(new Request(this.baseUrl + path, { headers: { accept } }));
    if (!res.ok) {
      await res.body?.cancel();
      throw new Error(`GET ${path} answered ${res.status}`);
    }
    return res;
  }

  /**
   * An environment's issuer metadata: live `issuer` is the `iss` of every JWT proof and of live SD-JWT
   * VCs; the test one's is that of test SD-JWT VCs. `jwks_uri` is at the service's public origin.
   */
  metadata(env: Env): Promise<IssuerMetadata> {
    return this.meta.get(env, async () => {
      const m = (await (await this.get(`/.well-known/jwt-vc-issuer${env === "test" ? "/test" : ""}`, "application/json")).json()) as IssuerMetadata;
      if (typeof m?.issuer !== "string" || typeof m.jwks_uri !== "string") throw new Error("the issuer metadata has no issuer or jwks_uri");
      return m;
    });
  }

  /** The key set of one environment; a kid it does not hold fetches it again (at most once a minute). */
  async keys(env: Env, kid?: string): Promise<Jwk[]> {
    const load = async () =>
      ((await (await this.get(`/.well-known/jwks${env === "test" ? "-test" : ""}.json`, "application/json")).json()) as { keys: Jwk[] }).keys;
    const keys = await this.jwks.get(env, load);
    if (kid === undefined || keys.some((k) => k.kid === kid)) return keys;
    return this.jwks.get(env, load, REFRESH_FOR_UNKNOWN_KID_MS);
  }

  /** A status list's JWT, by the URI a proof names; refused unless it is the issuer's. */
  async statusList(uri: string): Promise<string> {
    const path = await this.issuerPath(uri);
    return this.lists.get(path, async () => (await this.get(path, "application/statuslist+jwt")).text());
  }

  /** The signed revocation list of one environment (its `signature`, a compact JWS). */
  async revocationList(env: Env): Promise<string> {
    return this.revoked.get(env, async () => {
      const body = (await (await this.get(`/api/v1/proofs/revoked?env=${env}`, "application/json")).json()) as { signature?: string };
      if (typeof body.signature !== "string") throw new Error("the revocation list has no signature");
      return body.signature;
    });
  }

  private async issuerPath(uri: string): Promise<string> {
    let u: URL;
    try {
      u = new URL(uri);
    } catch {
      throw new Error("the status list URI is not a URL");
    }
    const home = new URL((await this.metadata("live")).jwks_uri).origin;
    if (u.origin !== home || !u.pathname.startsWith(STATUS_LISTS) || u.search) throw new Error(`the status list ${uri} is not one the service publishes`);
    return u.pathname;
  }
}
