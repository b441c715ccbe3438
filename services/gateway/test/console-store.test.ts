// The console's invites, sessions and audit log against the gateway's schema, on a clock the test
// moves: an invite dies after 24 h, a session after 12 h unused or 7 days in all, a challenge is
// answered once, and the audit log cannot be changed or cut.
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock, migrate, openDatabase, readMigrations, type Config, type Database } from "@icv/platform";
import { invite, Passkeys, SESSION_ABSOLUTE_MS, SESSION_IDLE_MS } from "../src/console/passkeys.ts";
import { ConsoleStore } from "../src/console/store.ts";
import { SoftAuthenticator } from "../../../test/support/authenticator.ts";
import { maybeFreshPostgres, type FreshPostgres } from "../../../test/support/fresh-postgres.ts";

const TENANT = "ten_01M80FG3J3K7TWHQ0ET3725RPB";
const config = { publicBaseUrl: "https://icv.example" } as Config;
const HOUR = 3_600_000;

let db: Database;
let pgFresh: FreshPostgres | undefined;
let store: ConsoleStore;

beforeAll(async () => {
  pgFresh = await maybeFreshPostgres();
  db = await openDatabase({ url: pgFresh?.url, dataDir: "memory://" });
  await migrate(db, "gateway", readMigrations(path.join(import.meta.dirname, "..", "migrations")));
  await db.query("INSERT INTO gateway.tenants (id, name) VALUES ($1, 'Acme')", [TENANT]);
  store = new ConsoleStore(db);
});
afterAll(async () => {
  await db?.close();
  await pgFresh?.drop();
});

/** A person invited and registered at the clock's time; answers their passkeys and authenticator. */
async function registered(clock: ManualClock, email: string) {
  const passkeys = new Passkeys(store, config, clock);
  const link = await invite(store, config, clock, { tenantId: TENANT, email, role: "developer" });
  const token = new URL(link.inviteUrl).hash.slice(1);
  const authenticator = new SoftAuthenticator("icv.example", "https://icv.example");
  const { options } = await passkeys.registrationOptions(token);
  const user = await passkeys.register(token, authenticator.register(options) as never);
  return { passkeys, user, authenticator, token };
}

describe("console invites and sessions", () => {
  it("an invite is single use and dies after 24 h", async () => {
    const clock = new ManualClock(new Date("2026-11-20T10:00:00.000Z"));
    const passkeys = new Passkeys(store, config, clock);
    const late = await invite(store, config, clock, { tenantId: TENANT, email: "late@acme.example", role: "viewer" });
    expect(late.inviteUrl).toMatch(/^https:\/\/icv\.example\/console\/invite#/);
    clock.advance(24 * HOUR + 1000);
    await expect(passkeys.registrationOptions(new URL(late.inviteUrl).hash.slice(1))).rejects.toMatchObject({ code: "not_found" });

    const r = await registered(clock, "once@acme.example");
    await expect(passkeys.registrationOptions(r.token)).rejects.toMatchObject({ code: "not_found" });
    await expect(invite(store, config, clock, { tenantId: TENANT, email: "not an email", role: "admin" })).rejects.toMatchObject({ code: "validation_error" });
    await expect(invite(store, config, clock, { tenantId: TENANT, email: "a@acme.example", role: "owner" })).rejects.toMatchObject({
      code: "validation_error",
    });
  });

  it("a session ends after 12 h unused, and after 7 days however much it is used", async () => {
    const clock = new ManualClock(new Date("2026-11-21T10:00:00.000Z"));
    const { passkeys, user } = await registered(clock, "timer@acme.example");
    const idle = await passkeys.openSession(user, {});
    clock.advance(SESSION_IDLE_MS - 60_000);
    expect((await passkeys.session(idle.id))?.email).toBe("timer@acme.example");
    clock.advance(SESSION_IDLE_MS - 60_000); // seen just now: the idle limit started again
    expect((await passkeys.session(idle.id))?.email).toBe("timer@acme.example");
    clock.advance(SESSION_IDLE_MS + 1000);
    expect(await passkeys.session(idle.id)).toBeUndefined();

    const busy = await passkeys.openSession(user, {});
    const opened = clock.now().getTime();
    while (clock.now().getTime() + 6 * HOUR < opened + SESSION_ABSOLUTE_MS) {
      clock.advance(6 * HOUR);
      expect(await passkeys.session(busy.id)).toBeDefined();
    }
    clock.advance(6 * HOUR);
    expect(await passkeys.session(busy.id)).toBeUndefined();
  });

  it("a sign-in challenge is answered once; an expired one not at all", async () => {
    const clock = new ManualClock(new Date("2026-11-22T10:00:00.000Z"));
    const { passkeys, authenticator } = await registered(clock, "twice@acme.example");
    const options = await passkeys.signInOptions();
    const assertion = authenticator.assert(options);
    expect((await passkeys.signIn(assertion as never)).email).toBe("twice@acme.example");
    await expect(passkeys.signIn(assertion as never)).rejects.toMatchObject({ code: "unauthorized" });
    const old = await passkeys.signInOptions();
    clock.advance(5 * 60_000 + 1000);
    await expect(passkeys.signIn(authenticator.assert(old) as never)).rejects.toMatchObject({ code: "unauthorized" });
  });
});

describe("the console's audit log", () => {
  it("is append-only: a row can be neither changed nor removed", async () => {
    const at = new Date("2026-11-23T10:00:00.000Z");
    await store.audit({ tenantId: TENANT, action: "session.signed_in", outcome: "ok", email: "a@acme.example", ip: "203.0.113.9" }, at);
    const { rows } = await store.auditOf(TENANT, 1, 100);
    expect(rows).toContainEqual(expect.objectContaining({ action: "session.signed_in", ip: "203.0.113.9", at }));
    await expect(db.query("UPDATE gateway.console_audit SET outcome = 'denied'")).rejects.toThrow(/P0001/); // raise_exception: the trigger;
    await expect(db.query("DELETE FROM gateway.console_audit")).rejects.toThrow(/P0001/); // raise_exception: the trigger;
    expect((await store.auditOf(TENANT, 1, 100)).total).toBe(rows.length);
  });
});
