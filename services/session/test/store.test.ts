// The session service's storage rules on a real database (PGlite, or a fresh Postgres database
// when DATABASE_URL is set): inbound messages are handled once (and a crashed claim is taken
// over), due sessions are swept to expired, and what a message's text asks for is read right.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate, openDatabase, readMigrations, type Database } from "@icv/platform";
import { freshPostgres, type FreshPostgres } from "../../../test/support/fresh-postgres.ts";
import { readText } from "../src/inbound.ts";
import { InboundStore } from "../src/store/inbound.ts";
import { SessionStore, type NewSession } from "../src/store/sessions.ts";
import { sessionToken, tokenLookup } from "../src/tokens.ts";

const MIGRATIONS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../migrations");
let pgFresh: FreshPostgres | undefined;
let db: Database;
let store: SessionStore;
let inbox: InboundStore;
const T0 = new Date("2026-11-22T10:00:00.000Z");
const at = (ms: number) => new Date(T0.getTime() + ms);

beforeAll(async () => {
  pgFresh = process.env.DATABASE_URL ? await freshPostgres(process.env.DATABASE_URL) : undefined;
  db = await openDatabase(pgFresh ? { url: pgFresh.url, poolMax: 2 } : { dataDir: "memory://" });
  await migrate(db, "session", readMigrations(MIGRATIONS));
  store = new SessionStore(db);
  inbox = new InboundStore(db);
});
afterAll(async () => {
  await db?.close();
  await pgFresh?.drop();
});

const session = (id: string, expiresAt: Date): NewSession => ({
  id,
  kind: "phone",
  tenant_id: "ten_store",
  environment: "live",
  channel: "telegram",
  auth_type: null,
  phone_number: null,
  token_lookup: tokenLookup(sessionToken("k".repeat(32), id)),
  client_metadata: null,
  created_at: T0,
  expires_at: expiresAt,
});

describe("inbound messages are handled once", () => {
  it("a repeat of a handled message is done; a message being handled is busy; a failed one can be handled again", async () => {
    expect((await inbox.claimInbound("whatsapp", "wamid.1", at(0), 60_000)).claim).toBe("new");
    expect((await inbox.claimInbound("whatsapp", "wamid.1", at(1_000), 60_000)).claim).toBe("busy");
    await inbox.finishInbound("whatsapp", "wamid.1", "verified");
    expect((await inbox.claimInbound("whatsapp", "wamid.1", at(2_000), 60_000)).claim).toBe("done");
    // the same id from another provider is another message
    expect((await inbox.claimInbound("sms", "wamid.1", at(2_000), 60_000)).claim).toBe("new");

    expect((await inbox.claimInbound("telegram", "42", at(0), 60_000)).claim).toBe("new");
    await inbox.releaseInbound("telegram", "42");
    expect((await inbox.claimInbound("telegram", "42", at(1_000), 60_000)).claim).toBe("new");
  });

  it("takes over a claim left unfinished by a crashed process once it is stale, and only one caller gets it", async () => {
    expect((await inbox.claimInbound("sms", "SM1", at(0), 60_000)).claim).toBe("new");
    expect((await inbox.claimInbound("sms", "SM1", at(59_000), 60_000)).claim).toBe("busy");
    const both = await Promise.all([inbox.claimInbound("sms", "SM1", at(61_000), 60_000), inbox.claimInbound("sms", "SM1", at(61_000), 60_000)]);
    expect(both.map((b) => b.claim).sort()).toEqual(["busy", "new"]);
  });

  it("forgets handled messages and stale chats older than the cutoffs", async () => {
    await inbox.startChat({ provider: "telegram", chat_id: "5001", user_id: "5001", target_kind: "code", target: "ABC123", started_at: at(0) });
    expect(await inbox.chat("telegram", "5001", at(60_000), 600_000)).toMatchObject({ target: "ABC123", target_kind: "code" });
    expect(await inbox.chat("telegram", "5001", at(600_001), 600_000)).toBeUndefined();
    // four messages (whatsapp wamid.1, sms wamid.1, telegram 42, sms SM1) and the chat
    expect(await inbox.prune(at(100_000), at(1))).toBe(5);
    expect((await inbox.claimInbound("whatsapp", "wamid.1", at(3_000), 60_000)).claim).toBe("new");
  });
});

describe("sender strikes (the per-sender throttle)", () => {
  it("counts a sender's strikes within the window, once per message key (ignored messages are not strikes)", async () => {
    for (let i = 0; i < 3; i++) expect(await inbox.recordStrike(`whatsapp:wamid.s${i}`, "sender-a", "strike", at(i * 1000))).toBe(true);
    // a provider's retry of the same message is not a second strike
    expect(await inbox.recordStrike("whatsapp:wamid.s0", "sender-a", "strike", at(5_000))).toBe(false);
    expect(await inbox.recordStrike("sms:SM-ignored", "sender-a", "ignored", at(6_000))).toBe(true);
    expect(await inbox.recordStrike("sms:SM-other", "sender-b", "strike", at(6_000))).toBe(true);
    // a message's claim counts its sender's strikes (ignored messages are not strikes)
    const strikes = async (sender: string, since: Date) =>
      (await inbox.claimInbound("sms", `SM-${sender}-${+since}`, at(7_000), 60_000, { id: sender, since })).strikes;
    expect(await strikes("sender-a", at(-1))).toBe(3);
    // the window slides: strikes older than `since` no longer count
    expect(await strikes("sender-a", at(1_500))).toBe(1);
    expect(await strikes("sender-b", at(-1))).toBe(1);
    expect(await strikes("nobody", at(-1))).toBe(0);
    // a repeat of a handled message still answers the count
    await inbox.finishInbound("sms", `SM-sender-a-${+at(-1)}`, "verified");
    expect(await inbox.claimInbound("sms", `SM-sender-a-${+at(-1)}`, at(8_000), 60_000, { id: "sender-a", since: at(-1) })).toEqual({
      claim: "done",
      strikes: 3,
    });
  });
});

describe("the throttled sender's notice", () => {
  it("is claimed once per window, by one of several claims at once, and again once the window has passed", async () => {
    const hour = 3600_000;
    const claims = await Promise.all([1, 2, 3].map(() => inbox.claimThrottleNotice("sender-n", at(0), at(-hour))));
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await inbox.claimThrottleNotice("sender-n", at(hour - 1), at(-1))).toBe(false);
    expect(await inbox.claimThrottleNotice("sender-other", at(hour - 1), at(-1))).toBe(true);
    expect(await inbox.claimThrottleNotice("sender-n", at(hour), at(0))).toBe(true);
    expect(await inbox.claimThrottleNotice("sender-n", at(hour + 1), at(1))).toBe(false);
  });
});

describe("session expiry sweep", () => {
  it("moves only due pending sessions to expired, and a verified one never", async () => {
    await store.insert(session("sess_01JSWEEP00000000000000000A", at(1_000)));
    await store.insert(session("sess_01JSWEEP00000000000000000B", at(5_000)));
    const c = await store.insert(session("sess_01JSWEEP00000000000000000C", at(1_000)));
    await store.markVerified(c, { phone: "+37069100001", verificationId: "ver_1", proofToken: "t", proofExpiresAt: at(9_000) }, at(500));
    expect(await store.expireDue(at(999))).toBe(0);
    expect(await store.expireDue(at(1_000))).toBe(1);
    const rows = await Promise.all(["A", "B", "C"].map((x) => store.byId(`sess_01JSWEEP00000000000000000${x}`)));
    expect(rows.map((r) => r!.status)).toEqual(["expired", "pending", "verified"]);
    // a late answer cannot verify an expired session
    expect(await store.markVerified(rows[0]!, { phone: "+1", verificationId: "ver_2", proofToken: "t", proofExpiresAt: at(9_000) }, at(1_001))).toBeUndefined();
  });
});

describe("readText", () => {
  const token = sessionToken("k".repeat(32), "sess_01JTEXT0000000000000000000");
  it.each([
    ["ABC123", { kind: "code", value: "ABC123" }],
    ["  abc123 ", { kind: "code", value: "ABC123" }],
    ["/start QW12ER", { kind: "code", value: "QW12ER" }],
    ["/start@icv_bot QW12ER", { kind: "code", value: "QW12ER" }],
    [`/start ${token}`, { kind: "session", value: token }],
    [`Verify my phone number: ${token}`, { kind: "session", value: token }],
    ["my code is QW12ER thanks", { kind: "code", value: "QW12ER" }],
  ])("%j asks for %j", (text, want) => {
    expect(readText(text)).toEqual(want);
  });
  it.each(["hello", "Please verify me", "/start", "", "ABC1234"])("%j asks for nothing we know", (text) => {
    expect(readText(text)).toBeUndefined();
  });
});
