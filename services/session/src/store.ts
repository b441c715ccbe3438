import { PersonalData, sealedAad, sealingDatabase, type Database, type Scope, type SealedColumns, type SealingDatabase } from "@icv/platform";

const S = "session";

/** Personal data of the session schema (docs/privacy.md): a session's number and client_metadata, sealed and opened on read. */
const SESSION_SEALED: SealedColumns = {
  text: ["phone_number"],
  json: ["client_metadata"],
  // sessions (sess_… phone-first, auth_… auth) are the only rows of the schema with these columns
  rowKey: (row) => (typeof row.id === "string" ? row.id : undefined),
};

export type SessionKind = "phone" | "auth";
export type SessionStatus = "pending" | "verified" | "failed" | "expired";

export interface SessionRow {
  id: string;
  kind: SessionKind;
  tenant_id: string;
  environment: "live" | "test";
  channel: "telegram" | "whatsapp" | "sms";
  auth_type: string | null;
  status: SessionStatus;
  phone_number: string | null;
  token_lookup: string;
  client_metadata: Record<string, unknown> | null;
  created_at: Date;
  expires_at: Date;
  verified_at: Date | null;
  failed_at: Date | null;
  verification_id: string | null;
  proof_token: string | null;
  proof_expires_at: Date | null;
  updated_at: Date;
  /** The project whose templates the bot's replies use (null: the default project). */
  project_id: string | null;
}

export type NewSession = Pick<
  SessionRow,
  "id" | "kind" | "tenant_id" | "environment" | "channel" | "auth_type" | "phone_number" | "token_lookup" | "client_metadata" | "created_at" | "expires_at"
> & { project_id?: string | null };

/** A Telegram chat waiting for the user's contact (what its /start named). */
export interface ChatRow {
  chat_id: string;
  user_id: string;
  target_kind: "code" | "session";
  target: string;
  started_at: Date;
}

/** The only file with the session service's SQL. */
export class SessionStore {
  private readonly db: SealingDatabase;

  /** `pd`: the data keys (hand-built test stores get this process's ephemeral ones). */
  constructor(db: Database, pd: PersonalData = PersonalData.ephemeral()) {
    this.db = sealingDatabase(db, pd, SESSION_SEALED);
  }

  /** A message sender (a phone number, a chat) as the strike table keeps it: its blind index, never the sender. */
  private senderIndex(sender: string): string {
    return this.db.personalData.index("sender", sender);
  }

  async insert(s: NewSession): Promise<SessionRow> {
    const r = await this.db.query<SessionRow>(
      `INSERT INTO ${S}.sessions (id, kind, tenant_id, environment, channel, auth_type, status, phone_number, token_lookup, client_metadata,
         created_at, expires_at, updated_at, project_id)
       VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8, $9, $10, $11, $10, $12) RETURNING *`,
      [
        s.id,
        s.kind,
        s.tenant_id,
        s.environment,
        s.channel,
        s.auth_type,
        this.db.personalData.seal(s.phone_number, sealedAad("phone_number", s.id)),
        s.token_lookup,
        this.db.personalData.sealJson(s.client_metadata, sealedAad("client_metadata", s.id)),
        s.created_at,
        s.expires_at,
        s.project_id ?? null,
      ],
    );
    return r.rows[0];
  }

  async get(scope: Scope, kind: SessionKind, id: string): Promise<SessionRow | undefined> {
    const r = await this.db.query<SessionRow>(`SELECT * FROM ${S}.sessions WHERE id = $1 AND kind = $2 AND tenant_id = $3 AND environment = $4`, [
      id,
      kind,
      scope.tenantId,
      scope.env,
    ]);
    return r.rows[0];
  }

  /** Any session by id, for the public QR image (its URL carries a signature, checked by the caller). */
  async byId(id: string): Promise<SessionRow | undefined> {
    return (await this.db.query<SessionRow>(`SELECT * FROM ${S}.sessions WHERE id = $1`, [id])).rows[0];
  }

  /** The session a message's token names. */
  async byTokenLookup(lookup: string): Promise<SessionRow | undefined> {
    return (await this.db.query<SessionRow>(`SELECT * FROM ${S}.sessions WHERE token_lookup = $1`, [lookup])).rows[0];
  }

  /** pending → verified with the number, the verification and its proof; undefined when it was no longer pending. */
  async markVerified(s: SessionRow, v: { phone: string; verificationId: string; proofToken: string; proofExpiresAt: Date }, at: Date) {
    const r = await this.db.query<SessionRow>(
      `UPDATE ${S}.sessions SET status = 'verified', phone_number = $2, verification_id = $3, proof_token = $4, proof_expires_at = $5,
              verified_at = $6, updated_at = $6
        WHERE id = $1 AND status = 'pending' AND expires_at > $6 RETURNING *`,
      [s.id, this.db.personalData.seal(v.phone, sealedAad("phone_number", s.id)), v.verificationId, v.proofToken, v.proofExpiresAt, at],
    );
    return r.rows[0];
  }

  /** pending → failed (an auth session answered by another number); undefined when it was no longer pending. */
  async markFailed(s: SessionRow, at: Date): Promise<SessionRow | undefined> {
    const r = await this.db.query<SessionRow>(
      `UPDATE ${S}.sessions SET status = 'failed', failed_at = $2, updated_at = $2 WHERE id = $1 AND status = 'pending' AND expires_at > $2 RETURNING *`,
      [s.id, at],
    );
    return r.rows[0];
  }

  /** Expires one pending session past its expiry (the read path never shows a stale pending). */
  async expireOne(id: string, now: Date): Promise<SessionRow | undefined> {
    const r = await this.db.query<SessionRow>(
      `UPDATE ${S}.sessions SET status = 'expired', updated_at = $2 WHERE id = $1 AND status = 'pending' AND expires_at <= $2 RETURNING *`,
      [id, now],
    );
    return r.rows[0];
  }

  /** Moves up to `batch` due pending sessions to expired; rows another replica holds are skipped. */
  async expireDue(now: Date, batch = 500): Promise<number> {
    if ((await this.db.query(`SELECT 1 FROM ${S}.sessions WHERE status = 'pending' AND expires_at <= $1 LIMIT 1`, [now])).rowCount === 0) return 0;
    const r = await this.db.query(
      `UPDATE ${S}.sessions s SET status = 'expired', updated_at = $1
         FROM (SELECT id FROM ${S}.sessions WHERE status = 'pending' AND expires_at <= $1 ORDER BY expires_at LIMIT ${batch} FOR UPDATE SKIP LOCKED) due
        WHERE s.id = due.id`,
      [now],
    );
    return r.rowCount ?? 0;
  }

  /** Remembers what a Telegram chat started (replacing what it started before). */
  async startChat(c: ChatRow): Promise<void> {
    await this.db.query(
      `INSERT INTO ${S}.telegram_chats (chat_id, user_id, target_kind, target, started_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (chat_id) DO UPDATE SET user_id = $2, target_kind = $3, target = $4, started_at = $5`,
      [c.chat_id, c.user_id, c.target_kind, c.target, c.started_at],
    );
  }

  /** The chat's open conversation, if it started within maxAgeMs. */
  async chat(chatId: string, now: Date, maxAgeMs: number): Promise<ChatRow | undefined> {
    const r = await this.db.query<ChatRow>(
      `SELECT chat_id::text, user_id::text, target_kind, target, started_at FROM ${S}.telegram_chats WHERE chat_id = $1 AND started_at > $2`,
      [chatId, new Date(now.getTime() - maxAgeMs)],
    );
    return r.rows[0];
  }

  async endChat(chatId: string): Promise<void> {
    await this.db.query(`DELETE FROM ${S}.telegram_chats WHERE chat_id = $1`, [chatId]);
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
    const b = await this.db.query(`DELETE FROM ${S}.telegram_chats WHERE started_at < $1`, [chatsBefore]);
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
