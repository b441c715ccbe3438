/**
 * Token Status Lists (draft-ietf-oauth-status-list; DECISIONS.md, Proofs): every proof has an
 * index in a list of its environment, 2 bits per entry (0 valid, 1 revoked, 2 suspended), served
 * as a JWT signed by that environment's key set. The lists are built and read with the OWF
 * library (@sd-jwt/jwt-status-list).
 *
 * - Indexes are never reused and no row is hot: a process takes a block of BLOCK indexes with one
 *   `nextval` (store.nextStatusBlock) and hands them out in a shuffled order, so that an index
 *   tells nothing of when a proof was issued.
 * - A list's JWT is cached and built again only when the list changed (a proof.revoked,
 *   proof.suspended or proof.reinstated event of that list, from this process or any other
 *   replica: `follow`), or when it is a minute old (a safety net; its JWT lives a day). Never
 *   per request: concurrent readers share one build.
 */
import { randomInt } from "node:crypto";
import { StatusList, type StatusListJWTHeaderParameters } from "@sd-jwt/jwt-status-list";
import { SignJWT } from "jose";
import { AppError, type Clock, type EventLog, type Subscription } from "@icv/platform";
import type { KeyEnv } from "./keys.ts";
import type { KeyRing } from "./keyring.ts";
import type { ProofStore } from "./store/proofs.ts";
import type { StatusClaim } from "./tokens.ts";

/** Entries per list: a proof hides among 100,000 others. */
export const LIST_SIZE = 100_000;
/** Indexes one process takes at a time (the sequences' INCREMENT BY, migration 004). */
export const BLOCK = 1000;
export const BITS = 2;
export const STATUS = { valid: 0, revoked: 1, suspended: 2 } as const;
/** How long a relying party may cache a list (the `ttl` claim), and how long its JWT is valid. */
export const LIST_TTL_S = 300;
const LIST_LIFETIME_S = 86_400;
/** A list is built again at least this often even without a change (a missed event heals). */
const MAX_AGE_MS = 60_000;
const MAX_CACHED_LISTS = 1000;

export const STATUS_LIST_PATH = "/api/v1/proofs/status-lists";
export const listId = (env: KeyEnv, list: number) => `${env}-${list}`;
export const listUri = (publicBaseUrl: string, env: KeyEnv, list: number) => `${publicBaseUrl}${STATUS_LIST_PATH}/${listId(env, list)}`;

/** `live-3` → {env: live, list: 3}; undefined for anything else. */
export function parseListId(id: string): { env: KeyEnv; list: number } | undefined {
  const m = /^(live|test)-(0|[1-9]\d{0,8})$/.exec(id);
  return m ? { env: m[1] as KeyEnv, list: Number(m[2]) } : undefined;
}

/** The indexes this process hands out, a block at a time, per environment. */
export class StatusIndexes {
  private readonly free = new Map<KeyEnv, number[]>();
  private readonly refilling = new Map<KeyEnv, Promise<void>>();

  constructor(private readonly store: ProofStore) {}

  /** A fresh index: its list and its position in it. */
  async next(env: KeyEnv): Promise<{ list: number; idx: number }> {
    for (;;) {
      const g = this.free.get(env)?.pop();
      if (g !== undefined) return { list: Math.floor(g / LIST_SIZE), idx: g % LIST_SIZE };
      let refill = this.refilling.get(env);
      if (!refill) {
        refill = this.refill(env).finally(() => this.refilling.delete(env));
        this.refilling.set(env, refill);
      }
      await refill;
    }
  }

  private async refill(env: KeyEnv): Promise<void> {
    const start = await this.store.nextStatusBlock(env);
    const block = Array.from({ length: BLOCK }, (_, i) => start + i);
    for (let i = block.length - 1; i > 0; i--) {
      const j = randomInt(i + 1);
      [block[i], block[j]] = [block[j], block[i]];
    }
    this.free.set(env, block);
  }
}

interface Cached {
  /** bumped on every change of the list */
  version: number;
  built?: { jwt: string; version: number; at: number };
  building?: Promise<string>;
}

/** The served lists: built on change, cached in between. */
export class StatusLists {
  private readonly lists = new Map<string, Cached>();
  /** the highest list number known to exist, per environment */
  private readonly known = new Map<KeyEnv, number>();
  builds = 0;

  constructor(
    private readonly store: ProofStore,
    private readonly keys: KeyRing,
    private readonly clock: Clock,
    private readonly publicBaseUrl: string,
  ) {}

  /** The `status` claim of a proof at this place. */
  claim(env: KeyEnv, at: { list: number; idx: number }): StatusClaim {
    return { status_list: { idx: at.idx, uri: listUri(this.publicBaseUrl, env, at.list) } };
  }

  /** The list's signed JWT; not_found for a list that does not exist (yet). */
  async jwt(id: string): Promise<string> {
    const at = parseListId(id);
    if (!at || !(await this.exists(at.env, at.list))) throw new AppError("not_found", "status list not found");
    const c = this.entry(id);
    const b = c.built;
    if (b && b.version === c.version && Date.now() - b.at < MAX_AGE_MS) return b.jwt;
    if (!c.building) {
      const version = c.version;
      c.building = this.build(at.env, at.list)
        .then((jwt) => {
          c.built = { jwt, version, at: Date.now() };
          return jwt;
        })
        .finally(() => {
          c.building = undefined;
        });
    }
    return c.building;
  }

  /** A list changed (one of its proofs was revoked, suspended or reinstated): the next read builds it again. */
  changed(env: KeyEnv, list?: number): void {
    for (const [id, c] of this.lists) if (list === undefined ? id.startsWith(`${env}-`) : id === listId(env, list)) c.version++;
  }

  /** Follows the proof events of every process: a change shows here within the event's delivery time. */
  follow(events: EventLog): Promise<Subscription> {
    return events.broadcast({
      topics: ["proof"],
      name: "proof status lists",
      onEvent: (e) => {
        if (e.eventType === "proof.issued") return;
        const list = (e.payload as { status_list?: unknown }).status_list;
        const at = typeof list === "string" ? parseListId(list) : undefined;
        this.changed(e.environment, at?.list);
      },
    });
  }

  private entry(id: string): Cached {
    let c = this.lists.get(id);
    if (!c) {
      if (this.lists.size >= MAX_CACHED_LISTS) this.lists.delete(this.lists.keys().next().value!);
      c = { version: 0 };
      this.lists.set(id, c);
    }
    return c;
  }

  private async exists(env: KeyEnv, list: number): Promise<boolean> {
    if (list <= (this.known.get(env) ?? -1)) return true;
    const last = await this.store.lastStatusBlock(env);
    const highest = last === undefined ? -1 : Math.floor(last / LIST_SIZE);
    this.known.set(env, highest);
    return list <= highest;
  }

  private async build(env: KeyEnv, list: number): Promise<string> {
    this.builds++;
    const entries = await this.store.statusEntries(env, list);
    const statuses = new StatusList(new Array(LIST_SIZE).fill(STATUS.valid), BITS);
    for (const e of entries) statuses.setStatus(e.idx, e.revoked ? STATUS.revoked : STATUS.suspended);
    const key = await this.keys.signingKey(env);
    const iat = Math.floor(this.clock.now().getTime() / 1000);
    const uri = listUri(this.publicBaseUrl, env, list);
    const header: StatusListJWTHeaderParameters = { typ: "statuslist+jwt", alg: "RS256", kid: key.kid };
    return new SignJWT({ sub: uri, iat, exp: iat + LIST_LIFETIME_S, ttl: LIST_TTL_S, status_list: { bits: BITS, lst: statuses.compressStatusList() } })
      .setProtectedHeader(header)
      .sign(key.privateKey);
  }
}
