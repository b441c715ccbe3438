import { PersonalData, sealingDatabase, type Database, type SealingDatabase } from "@icv/platform";
import { S, SESSION_SEALED } from "./sessions.ts";

/** A chat (Telegram, Viber) waiting for the user's contact: what its deep link named. */
export interface ChatRow {
  provider: string;
  chat_id: string;
  user_id: string;
  target_kind: "code" | "session";
  target: string;
  started_at: Date;
}

/**
 * Inbound provider messages: each handled once (claims), the chats waiting for a contact, and
 * the senders' strikes (the throttle), senders kept as blind indexes.
 */
export class InboundStore {
  private readonly db: SealingDatabase;

  /** `pd`: the data keys (hand-built test stores get this process's ephemeral ones). */
  constructor(db: Database, pd: PersonalData = PersonalData.ephemeral()) {
    this.db = sealingDatabase(db, pd, SESSION_SEALED);
  }

  /** A message sender (a phone number, a chat) as the strike table keeps it: its blind index, never the sender. */
  private senderIndex(sender: string): string {
    return this.db.personalData.index("sender", sender);
  }

  /** Remembers what a chat started (replacing what it started before). */
  async startChat(c: ChatRow): Promise<void> {
    await this.db.query(
      `INSERT INTO ${S}.chats (provider, chat_id, user_id, target_kind, target, started_at) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (provider, chat_id) DO UPDATE SET user_id = $3, target_kind = $4, target = $5, started_at = $6`,
      [c.provider, c.chat_id, c.user_id, c.target_kind, c.target, c.started_at],
    );
  }

  /** The chat's open conversation, if it started within maxAgeMs. */
  async chat(provider: string, chatId: string, now: Date, maxAgeMs: number): Promise<ChatRow | undefined> {
    const r = await this.db.query<ChatRow>(
      `SELECT provider, chat_id, user_id, target_kind, target, started_at FROM ${S}.chats WHERE provider = $1 AND chat_id = $2 AND started_at > $3`,
      [provider, chatId, new Date(now.getTime() - maxAgeMs)],
    );
    return r.rows[0];
  }

  async endChat(provider: string, chatId: string): Promise<void> {
    await this.db.query(`DELETE FROM ${S}.chats WHERE provider = $1 AND chat_id = $2`, [provider, chatId]);
  }

  /**
   * Claims an inbound message for handling. "new": handle it. "done": it was handled (a provider
   * retry; change nothing). "busy": another call is handling it right now (the provider should
   * retry later). A claim left unfinished by a crashed process is taken over after staleMs.
   */
  /**
   * Claims a provider message for handling ("new"), or says it was handled ("done") or is being
   * handled ("busy"); a claim left by a crash is taken over once older than `staleMs`. With a
   * sender, the same statement counts the sender's strikes since `sender.since` (the throttle).
   */
  async claimInbound(
    provider: string,
    messageId: string,
    now: Date,
    staleMs: number,
    sender?: { id: string; since: Date },
  ): Promise<{ claim: "new" | "done" | "busy"; strikes: number }> {
    const ins = await this.db.query<{ inserted: boolean; strikes: number }>(
      `WITH ins AS (INSERT INTO ${S}.inbound_messages (provider, message_id, received_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING 1)
       SELECT EXISTS (SELECT 1 FROM ins) AS inserted,
              (SELECT count(*)::int FROM ${S}.inbound_strikes WHERE sender = $4 AND kind = 'strike' AND created_at > $5) AS strikes`,
      [provider, messageId, now, sender ? this.senderIndex(sender.id) : null, sender?.since ?? now],
    );
    const { inserted, strikes } = ins.rows[0];
    if (inserted) return { claim: "new", strikes };
    const taken = await this.db.query(
      `UPDATE ${S}.inbound_messages SET received_at = $3 WHERE provider = $1 AND message_id = $2 AND outcome IS NULL AND received_at <= $4`,
      [provider, messageId, now, new Date(now.getTime() - staleMs)],
    );
    if (taken.rowCount === 1) return { claim: "new", strikes };
    const r = await this.db.query<{ outcome: string | null }>(`SELECT outcome FROM ${S}.inbound_messages WHERE provider = $1 AND message_id = $2`, [
      provider,
      messageId,
    ]);
    return { claim: r.rows[0]?.outcome ? "done" : "busy", strikes };
  }

  async finishInbound(provider: string, messageId: string, outcome: string): Promise<void> {
    await this.db.query(`UPDATE ${S}.inbound_messages SET outcome = $3 WHERE provider = $1 AND message_id = $2`, [provider, messageId, outcome]);
  }

  /** A handler failed: forget the claim so the provider's retry is handled afresh. */
  async releaseInbound(provider: string, messageId: string): Promise<void> {
    await this.db.query(`DELETE FROM ${S}.inbound_messages WHERE provider = $1 AND message_id = $2 AND outcome IS NULL`, [provider, messageId]);
  }

  /** Forgets handled messages, sender strikes and stale chats older than the cutoffs; answers how many rows went. */
  async prune(messagesBefore: Date, chatsBefore: Date): Promise<number> {
    const a = await this.db.query(`DELETE FROM ${S}.inbound_messages WHERE received_at < $1`, [messagesBefore]);
    const b = await this.db.query(`DELETE FROM ${S}.chats WHERE started_at < $1`, [chatsBefore]);
    const c = await this.db.query(`DELETE FROM ${S}.inbound_strikes WHERE created_at < $1`, [messagesBefore]);
    return (a.rowCount ?? 0) + (b.rowCount ?? 0) + (c.rowCount ?? 0);
  }

  /**
   * Claims the one "you are ignored" reply of a throttled sender: true when none was claimed after
   * `since` (the window). One statement, so of messages arriving at once exactly one gets it.
   */
  async claimThrottleNotice(sender: string, at: Date, since: Date): Promise<boolean> {
    const r = await this.db.query(
      `INSERT INTO ${S}.inbound_strikes AS s (message_key, sender, kind, created_at) VALUES ($1, $2, 'ignored', $3)
       ON CONFLICT (message_key) DO UPDATE SET created_at = $3 WHERE s.created_at <= $4`,
      [`notice:${this.senderIndex(sender)}`, this.senderIndex(sender), at, since],
    );
    return r.rowCount === 1;
  }

  /** Records what one provider message did to its sender's budget; false when that message was already recorded (a retry). */
  async recordStrike(messageKey: string, sender: string, kind: "strike" | "ignored", at: Date): Promise<boolean> {
    const r = await this.db.query(`INSERT INTO ${S}.inbound_strikes (message_key, sender, kind, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, [
      messageKey,
      this.senderIndex(sender),
      kind,
      at,
    ]);
    return r.rowCount === 1;
  }
}
