// Local stand-ins for the messaging providers, on 127.0.0.1: each speaks its provider's real HTTP
// API (paths, auth, JSON and error shapes), records what the bot sent, and can play the user by
// POSTing a genuine webhook delivery (signed as the provider signs it) to our hook.
import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { twilioSignature, whatsappSignature } from "../../packages/platform/src/messaging/index.ts";
import { viberSignature } from "../../packages/platform/src/messaging/viber.ts";

/** What our hook answered to a delivery. */
export interface HookAnswer {
  status: number;
  body: string;
}

// ---------------------------------------------------------------------------------------------
// shared plumbing

type Route = (req: http.IncomingMessage, body: Buffer, res: http.ServerResponse) => void | Promise<void>;

interface Server {
  origin: string;
  close(): Promise<void>;
}

async function listen(route: Route): Promise<Server> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      Promise.resolve(route(req, Buffer.concat(chunks), res)).catch((e: unknown) => {
        if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
        res.end(String(e));
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    origin: `http://127.0.0.1:${port}`,
    close() {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.writableEnded || res.destroyed) return;
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));
}

/** Parses a request body the way the provider accepts it: JSON, or form/query parameters. */
function paramsOf(req: http.IncomingMessage, body: Buffer): Record<string, unknown> | undefined {
  const type = (req.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase();
  const query = Object.fromEntries(new URL(req.url ?? "/", "http://x").searchParams);
  if (body.length === 0) return query;
  if (type === "application/json") {
    try {
      const v: unknown = JSON.parse(body.toString("utf8"));
      return typeof v === "object" && v !== null && !Array.isArray(v) ? { ...query, ...(v as Record<string, unknown>) } : undefined;
    } catch {
      return undefined;
    }
  }
  if (type === "application/x-www-form-urlencoded") return { ...query, ...Object.fromEntries(new URLSearchParams(body.toString("utf8"))) };
  return undefined;
}

/** A list that can be waited on: waitFor resolves with the first item matching pred. */
class Recorded<T> {
  readonly items: T[] = [];
  private waiters = new Set<() => void>();

  push(item: T): void {
    this.items.push(item);
    for (const w of [...this.waiters]) w();
  }

  async waitFor(pred: (item: T) => boolean, timeoutMs: number, what: string): Promise<T> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.items.find(pred);
      if (hit !== undefined) return hit;
      const left = until - Date.now();
      if (left <= 0) throw new Error(`${what}: nothing matching within ${timeoutMs} ms (${this.items.length} recorded)`);
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(t);
          this.waiters.delete(done);
          resolve();
        };
        const t = setTimeout(done, left);
        this.waiters.add(done);
      });
    }
  }
}

async function post(url: string, body: string, headers: Record<string, string>): Promise<HookAnswer> {
  const res = await fetch(url, { method: "POST", headers, body, redirect: "manual", signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: await res.text() };
}

const nowS = () => Math.floor(Date.now() / 1000);

// ---------------------------------------------------------------------------------------------
// Telegram Bot API

/** A Telegram update as the Bot API sends it (the parts the stand-in builds). */
export interface TgUpdate {
  update_id: number;
  message?: {
    message_id: number;
    from?: { id: number; is_bot?: boolean; first_name?: string; username?: string };
    chat: { id: number; type: string; first_name?: string; username?: string };
    date: number;
    text?: string;
    entities?: { offset: number; length: number; type: string }[];
    contact?: { phone_number: string; user_id?: number; first_name?: string };
  };
}

/** Who is typing in a built update; chatId defaults to userId (a private chat's id is the user's). */
export interface TgFrom {
  userId: number;
  chatId?: number;
  firstName?: string;
  username?: string;
}

let messageIds = 1_000;

function tgMessageBase(from: TgFrom) {
  const user = {
    id: from.userId,
    is_bot: false,
    first_name: from.firstName ?? "Test",
    ...(from.username ? { username: from.username } : {}),
  };
  return {
    message_id: ++messageIds,
    from: user,
    chat: {
      id: from.chatId ?? from.userId,
      type: "private",
      first_name: user.first_name,
      ...(from.username ? { username: from.username } : {}),
    },
    date: nowS(),
  };
}

/** A text message update, as Telegram delivers one a user typed (e.g. "/start abc"). */
export function telegramTextUpdate(updateId: number, from: TgFrom, text: string): TgUpdate {
  const base = tgMessageBase(from);
  const cmd = /^\/\w+/.exec(text);
  return {
    update_id: updateId,
    message: { ...base, text, ...(cmd ? { entities: [{ offset: 0, length: cmd[0].length, type: "bot_command" }] } : {}) },
  };
}

/**
 * A contact update: the user tapped "share my phone number" (contactUserId = their own id, the
 * default) or forwarded someone else's contact card (another id, or null for none).
 */
export function telegramContactUpdate(updateId: number, from: TgFrom, phone: string, contactUserId: number | null = from.userId): TgUpdate {
  const base = tgMessageBase(from);
  const contact = { phone_number: phone, first_name: base.from.first_name, ...(contactUserId === null ? {} : { user_id: contactUserId }) };
  return { update_id: updateId, message: { ...base, contact } };
}

/** A call the bot made to the Bot API (any method but getUpdates). */
export interface TgCall {
  method: string;
  body: Record<string, unknown>;
}

/** A getUpdates call: the offset and timeout it asked with. */
export interface TgPoll {
  offset?: number;
  timeout: number;
}

export interface TelegramApi {
  /** Give this to the client as TELEGRAM_API_URL. */
  url: string;
  botId: number;
  /** Every authorised call but getUpdates, in order (sendMessage, setWebhook, deleteWebhook, getMe). */
  sent: TgCall[];
  /** Every authorised getUpdates call. */
  polls: TgPoll[];
  /** Set by setWebhook, cleared by deleteWebhook. */
  webhook?: { url: string; secret?: string; allowedUpdates?: string[] };
  /** Queues an update for getUpdates (the polling mode). */
  queueUpdate(u: TgUpdate): void;
  /** Updates not yet acknowledged (an offset above them confirms them). */
  pending(): TgUpdate[];
  /** A fresh update_id, one above the last. */
  nextUpdateId(): number;
  /** telegramTextUpdate with the next update_id. */
  textUpdate(from: TgFrom, text: string): TgUpdate;
  /** telegramContactUpdate with the next update_id. */
  contactUpdate(from: TgFrom, phone: string, contactUserId?: number | null): TgUpdate;
  /**
   * Delivers an update to our hook as Telegram does (webhook mode), with the secret token given
   * to setWebhook, or `opts.secret` (null: no header).
   */
  userSends(hookUrl: string, update: TgUpdate, opts?: { secret?: string | null }): Promise<HookAnswer>;
  /** The first call matching pred (waiting for it); throws after timeoutMs. */
  waitForSent(pred: (c: TgCall) => boolean, timeoutMs?: number): Promise<TgCall>;
  /** Makes the next call of `method` fail as Telegram would (e.g. 429 with retry_after, 403 blocked by user). */
  failNext(method: string, error: { error_code: number; description: string; retry_after?: number }): void;
  close(): Promise<void>;
}

const TG_SECRET_RE = /^[A-Za-z0-9_-]{1,256}$/;

/** Starts a Telegram Bot API stand-in for one bot. */
export async function startTelegramApi(o: { token: string; botUsername: string }): Promise<TelegramApi> {
  const botId = Number(o.token.split(":")[0]) || 7_000_000_001;
  const sent = new Recorded<TgCall>();
  const polls: TgPoll[] = [];
  let queue: TgUpdate[] = [];
  let lastUpdateId = 100_000;
  const failures = new Map<string, { error_code: number; description: string; retry_after?: number }[]>();
  let waiting: { res: http.ServerResponse; wake: () => void } | undefined;
  const bot = { id: botId, is_bot: true, first_name: "ICV Test Bot", username: o.botUsername };

  const api: TelegramApi = {
    url: "",
    botId,
    sent: sent.items,
    polls,
    webhook: undefined,
    queueUpdate(u) {
      queue.push(u);
      queue.sort((a, b) => a.update_id - b.update_id);
      lastUpdateId = Math.max(lastUpdateId, u.update_id);
      waiting?.wake();
    },
    pending: () => [...queue],
    nextUpdateId: () => ++lastUpdateId,
    textUpdate: (from, text) => telegramTextUpdate(api.nextUpdateId(), from, text),
    contactUpdate: (from, phone, contactUserId) => telegramContactUpdate(api.nextUpdateId(), from, phone, contactUserId),
    userSends(hookUrl, update, opts = {}) {
      const secret = opts.secret === undefined ? api.webhook?.secret : opts.secret;
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (secret !== null && secret !== undefined) headers["x-telegram-bot-api-secret-token"] = secret;
      return post(hookUrl, JSON.stringify(update), headers);
    },
    waitForSent: (pred, timeoutMs = 5_000) => sent.waitFor(pred, timeoutMs, "telegram stand-in"),
    failNext(method, error) {
      failures.set(method, [...(failures.get(method) ?? []), error]);
    },
    close: () => server.close(),
  };

  const fail = (res: http.ServerResponse, error_code: number, description: string, retry_after?: number) =>
    sendJson(res, error_code, { ok: false, error_code, description, ...(retry_after ? { parameters: { retry_after } } : {}) });
  const ok = (res: http.ServerResponse, result: unknown, description?: string) =>
    sendJson(res, 200, { ok: true, result, ...(description ? { description } : {}) });

  const getUpdates = async (res: http.ServerResponse, p: Record<string, unknown>) => {
    if (api.webhook) return fail(res, 409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first");
    const offset = p.offset === undefined ? undefined : Number(p.offset);
    const timeout = Math.min(Math.max(Number(p.timeout ?? 0) || 0, 0), 50);
    const limit = Math.min(Math.max(Number(p.limit ?? 100) || 100, 1), 100);
    polls.push({ offset, timeout });
    if (offset !== undefined && Number.isFinite(offset)) {
      // Telegram forgets every update below the offset (they count as acknowledged); a negative
      // offset keeps only the last -offset updates.
      queue = offset < 0 ? queue.slice(offset) : queue.filter((u) => u.update_id >= offset);
    }
    if (queue.length === 0 && timeout > 0) {
      // one long poll at a time: a newer one ends the older with 409, as Telegram does
      if (waiting) {
        fail(waiting.res, 409, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running");
        waiting.wake();
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(wake, timeout * 1000);
        const me = { res, wake };
        function wake() {
          clearTimeout(t);
          if (waiting === me) waiting = undefined;
          resolve();
        }
        waiting = me;
        res.on("close", wake);
      });
    }
    ok(res, queue.slice(0, limit));
  };

  const server = await listen(async (req, body, res) => {
    const m = /^\/bot([^/]*)\/([A-Za-z]+)$/.exec(new URL(req.url ?? "/", "http://x").pathname);
    if (!m) return fail(res, 404, "Not Found");
    if (decodeURIComponent(m[1]) !== o.token) return fail(res, 401, "Unauthorized");
    const method = m[2];
    const p = paramsOf(req, body);
    if (!p) return fail(res, 400, "Bad Request: invalid request body");
    const planned = failures.get(method)?.shift();
    if (planned) return fail(res, planned.error_code, planned.description, planned.retry_after);
    if (method !== "getUpdates") sent.push({ method, body: p });
    switch (method) {
      case "getMe":
        return ok(res, { ...bot, can_join_groups: true, can_read_all_group_messages: false, supports_inline_queries: false });
      case "sendMessage": {
        const chatId = Number(p.chat_id);
        if (p.chat_id === undefined || !Number.isInteger(chatId)) return fail(res, 400, "Bad Request: chat_id is empty");
        if (typeof p.text !== "string" || p.text.trim() === "") return fail(res, 400, "Bad Request: message text is empty");
        if (p.text.length > 4096) return fail(res, 400, "Bad Request: message is too long");
        return ok(res, { message_id: ++messageIds, from: bot, chat: { id: chatId, type: "private" }, date: nowS(), text: p.text });
      }
      case "setWebhook": {
        if (typeof p.url !== "string" || p.url === "") return fail(res, 400, "Bad Request: bad webhook: URL must not be empty");
        if (p.secret_token !== undefined && (typeof p.secret_token !== "string" || !TG_SECRET_RE.test(p.secret_token))) {
          return fail(res, 400, "Bad Request: secret token contains unallowed characters");
        }
        const allowed = Array.isArray(p.allowed_updates) ? p.allowed_updates.map(String) : undefined;
        api.webhook = { url: p.url, secret: p.secret_token as string | undefined, allowedUpdates: allowed };
        if (waiting) {
          fail(waiting.res, 409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first");
          waiting.wake();
        }
        return ok(res, true, "Webhook was set");
      }
      case "deleteWebhook": {
        const had = api.webhook !== undefined;
        api.webhook = undefined;
        if (p.drop_pending_updates === true || p.drop_pending_updates === "true") queue = [];
        return ok(res, true, had ? "Webhook was deleted" : "Webhook is already deleted");
      }
      case "getWebhookInfo":
        return ok(res, {
          url: api.webhook?.url ?? "",
          has_custom_certificate: false,
          pending_update_count: queue.length,
          ...(api.webhook?.allowedUpdates ? { allowed_updates: api.webhook.allowedUpdates } : {}),
        });
      case "getUpdates":
        return getUpdates(res, p);
      default:
        return fail(res, 404, "Not Found");
    }
  });
  api.url = server.origin;
  return api;
}

// ---------------------------------------------------------------------------------------------
// WhatsApp Cloud API (Graph API)

/** A message the business sent through POST /{phone-number-id}/messages. */
export interface WaSent {
  to: string;
  type: string;
  /** text.body for a text message. */
  text?: string;
  /** A template message: its name, language and the text parameters of its body and buttons. */
  template?: { name: string; language: string; body: string[]; buttons: string[] };
  /** The wamid the stand-in answered with. */
  id: string;
  body: Record<string, unknown>;
  authorization: string | undefined;
}

/** What the user types, for userSends; `id` is the wamid (a fresh one by default). */
export interface WaUserMessage {
  from: string;
  text: string;
  id?: string;
  name?: string;
  timestamp?: number;
}

export interface WhatsAppApi {
  /** Give this to the client as WHATSAPP_API_URL (it ends in the Graph version, like the real one). */
  url: string;
  /** Messages sent successfully, in order. */
  sent: WaSent[];
  /**
   * Plays the user: builds a real Cloud API webhook delivery for this text message and POSTs it
   * to our hook, signed with X-Hub-Signature-256 under the app secret, `signWith`, or unsigned (null).
   */
  userSends(hookUrl: string, m: WaUserMessage, opts?: { signWith?: string | null }): Promise<HookAnswer>;
  /** POSTs any webhook payload (e.g. whatsappStatusPayload) to our hook, signed as userSends signs. */
  deliver(hookUrl: string, payload: unknown, opts?: { signWith?: string | null }): Promise<HookAnswer>;
  /** The subscription handshake Meta performs: GET hookUrl?hub.mode=subscribe&hub.verify_token=…&hub.challenge=…. */
  verifyHook(hookUrl: string, verifyToken: string): Promise<HookAnswer & { challenge: string }>;
  /** The first sent message matching pred (waiting for it); throws after timeoutMs. */
  waitForSent(pred: (m: WaSent) => boolean, timeoutMs?: number): Promise<WaSent>;
  close(): Promise<void>;
}

const wamid = () => `wamid.${randomBytes(24).toString("base64url")}`;

/** The metadata of our business number in a delivery. */
export interface WaBusiness {
  phoneNumberId: string;
  displayPhoneNumber: string;
  wabaId?: string;
}

function waDelivery(biz: WaBusiness, value: Record<string, unknown>) {
  return {
    object: "whatsapp_business_account",
    entry: [
      {
        id: biz.wabaId ?? "102290129340398",
        changes: [
          {
            value: {
              messaging_product: "whatsapp",
              metadata: { display_phone_number: biz.displayPhoneNumber, phone_number_id: biz.phoneNumberId },
              ...value,
            },
            field: "messages",
          },
        ],
      },
    ],
  };
}

/** The webhook payload Meta sends when a user sends us a text message. */
export function whatsappTextPayload(biz: WaBusiness, m: WaUserMessage) {
  return waDelivery(biz, {
    contacts: [{ profile: { name: m.name ?? "Test User" }, wa_id: m.from }],
    messages: [{ from: m.from, id: m.id ?? wamid(), timestamp: String(m.timestamp ?? nowS()), text: { body: m.text }, type: "text" }],
  });
}

/** The webhook payload Meta sends when a message we sent changes state (sent, delivered, read, failed). */
export function whatsappStatusPayload(biz: WaBusiness, s: { id: string; recipient: string; status: "sent" | "delivered" | "read" | "failed" }) {
  return waDelivery(biz, {
    statuses: [
      {
        id: s.id,
        status: s.status,
        timestamp: String(nowS()),
        recipient_id: s.recipient,
        conversation: { id: randomBytes(16).toString("hex"), origin: { type: "service" } },
        pricing: { billable: true, pricing_model: "CBP", category: "service" },
      },
    ],
  });
}

/** Starts a WhatsApp Cloud API stand-in for one business phone number. */
export async function startWhatsAppApi(o: {
  phoneNumberId: string;
  accessToken: string;
  appSecret: string;
  displayPhoneNumber?: string;
  version?: string;
  /** Approved templates as "name/language" (default: the service's default authentication template). */
  templates?: string[];
}): Promise<WhatsAppApi> {
  const version = o.version ?? "v21.0";
  const templates = new Set(o.templates ?? ["verification_code/en_US"]);
  const biz: WaBusiness = { phoneNumberId: o.phoneNumberId, displayPhoneNumber: o.displayPhoneNumber ?? "15550001234" };
  const sent = new Recorded<WaSent>();
  const graphError = (res: http.ServerResponse, status: number, code: number, message: string, type = "OAuthException", subcode?: number) =>
    sendJson(
      res,
      status,
      { error: { message, type, code, ...(subcode ? { error_subcode: subcode } : {}), fbtrace_id: randomBytes(9).toString("base64url") } },
      status === 401 ? { "www-authenticate": 'OAuth "Facebook Platform" "invalid_token" "Invalid OAuth access token"' } : {},
    );

  const server = await listen((req, body, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const m = new RegExp(`^/${version.replace(".", "\\.")}/([^/]+)/messages$`).exec(path);
    if (req.method !== "POST" || !m) return graphError(res, 400, 100, "Unknown path components", "OAuthException");
    const auth = req.headers.authorization;
    if (auth !== `Bearer ${o.accessToken}`) return graphError(res, 401, 190, "Invalid OAuth access token - Cannot parse access token");
    if (decodeURIComponent(m[1]) !== o.phoneNumberId) {
      return graphError(
        res,
        400,
        100,
        `Unsupported post request. Object with ID '${m[1]}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
        "GraphMethodException",
        33,
      );
    }
    const p = paramsOf(req, body);
    if (!p) return graphError(res, 400, 100, "(#100) Invalid parameter");
    if (p.messaging_product !== "whatsapp") return graphError(res, 400, 100, "(#100) The parameter messaging_product is required.");
    if (typeof p.to !== "string" || p.to === "") return graphError(res, 400, 100, "(#100) The parameter to is required.");
    const type = typeof p.type === "string" ? p.type : "text";
    const text = (p.text as { body?: unknown } | undefined)?.body;
    if (type === "text" && (typeof text !== "string" || text === "")) return graphError(res, 400, 100, "(#100) The parameter text['body'] is required.");
    if (typeof text === "string" && text.length > 4096) return graphError(res, 400, 100, "(#100) Param text['body'] must be at most 4096 characters long.");
    let template: WaSent["template"];
    if (type === "template") {
      const t = p.template as { name?: unknown; language?: { code?: unknown }; components?: unknown } | undefined;
      if (typeof t?.name !== "string" || t.name === "") return graphError(res, 400, 100, "(#100) The parameter template['name'] is required.");
      if (typeof t.language?.code !== "string") return graphError(res, 400, 100, "(#100) The parameter template['language']['code'] is required.");
      if (!templates.has(`${t.name}/${t.language.code}`))
        return graphError(res, 400, 132001, "(#132001) Template name does not exist in the translation", "OAuthException");
      const components = Array.isArray(t.components) ? (t.components as { type?: unknown; parameters?: { type?: unknown; text?: unknown }[] }[]) : [];
      const texts = (kind: string) =>
        components.filter((c) => c.type === kind).flatMap((c) => (c.parameters ?? []).filter((x) => x.type === "text").map((x) => String(x.text)));
      template = { name: t.name, language: t.language.code, body: texts("body"), buttons: texts("button") };
    }
    const id = wamid();
    const waId = p.to.replace(/\D/g, "");
    sent.push({
      to: p.to,
      type,
      text: typeof text === "string" ? text : undefined,
      ...(template ? { template } : {}),
      id,
      body: p,
      authorization: auth,
    });
    sendJson(res, 200, { messaging_product: "whatsapp", contacts: [{ input: p.to, wa_id: waId }], messages: [{ id }] });
  });

  const api: WhatsAppApi = {
    url: `${server.origin}/${version}`,
    sent: sent.items,
    deliver(hookUrl, payload, opts = {}) {
      const raw = JSON.stringify(payload);
      const secret = opts.signWith === undefined ? o.appSecret : opts.signWith;
      const headers: Record<string, string> = { "content-type": "application/json", "user-agent": "facebookexternalua" };
      if (secret !== null) headers["x-hub-signature-256"] = whatsappSignature(secret, raw);
      return post(hookUrl, raw, headers);
    },
    userSends: (hookUrl, m, opts) => api.deliver(hookUrl, whatsappTextPayload(biz, m), opts),
    async verifyHook(hookUrl, verifyToken) {
      const challenge = String(randomBytes(4).readUInt32BE());
      const u = new URL(hookUrl);
      u.searchParams.set("hub.mode", "subscribe");
      u.searchParams.set("hub.verify_token", verifyToken);
      u.searchParams.set("hub.challenge", challenge);
      const res = await fetch(u, { redirect: "manual", signal: AbortSignal.timeout(10_000) });
      return { status: res.status, body: await res.text(), challenge };
    },
    waitForSent: (pred, timeoutMs = 5_000) => sent.waitFor(pred, timeoutMs, "whatsapp stand-in"),
    close: () => server.close(),
  };
  return api;
}

// ---------------------------------------------------------------------------------------------
// Twilio Programmable Messaging

/** An SMS the account sent through POST /2010-04-01/Accounts/{sid}/Messages.json. */
export interface SmsSent {
  sid: string;
  to: string;
  from: string;
  body: string;
}

export interface TwilioApi {
  /** Give this to the client as TWILIO_API_URL. */
  url: string;
  /** Messages accepted (201), in order. */
  sent: SmsSent[];
  /**
   * Plays the user: POSTs Twilio's inbound-SMS form to our hook with X-Twilio-Signature computed
   * over `signedUrl ?? hookUrl` and the form fields, under the auth token, `signWith`, or unsigned (null).
   */
  userSends(
    hookUrl: string,
    m: { from: string; to: string; body: string; sid?: string },
    opts?: { signWith?: string | null; signedUrl?: string },
  ): Promise<HookAnswer>;
  /** The first sent SMS matching pred (waiting for it); throws after timeoutMs. */
  waitForSent(pred: (m: SmsSent) => boolean, timeoutMs?: number): Promise<SmsSent>;
  close(): Promise<void>;
}

const E164 = /^\+[1-9]\d{6,14}$/;
const twilioSid = (prefix: string) => `${prefix}${randomBytes(16).toString("hex")}`;

/** Starts a Twilio REST API stand-in for one account. */
export async function startTwilioApi(o: { accountSid: string; authToken: string }): Promise<TwilioApi> {
  const sent = new Recorded<SmsSent>();
  const expectedAuth = `Basic ${Buffer.from(`${o.accountSid}:${o.authToken}`).toString("base64")}`;
  const twilioError = (res: http.ServerResponse, status: number, code: number, message: string) =>
    sendJson(
      res,
      status,
      { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status },
      status === 401 ? { "www-authenticate": 'Basic realm="Twilio API"' } : {},
    );

  const server = await listen((req, body, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const m = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/.exec(path);
    if (!m) return twilioError(res, 404, 20404, "The requested resource was not found");
    if (req.headers.authorization !== expectedAuth || decodeURIComponent(m[1]) !== o.accountSid) return twilioError(res, 401, 20003, "Authenticate");
    if (req.method !== "POST") return twilioError(res, 405, 20004, "Method not allowed");
    const type = (req.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase();
    const p = type === "application/x-www-form-urlencoded" ? Object.fromEntries(new URLSearchParams(body.toString("utf8"))) : {};
    if (!p.To) return twilioError(res, 400, 21604, "A 'To' phone number is required.");
    if (!p.From) return twilioError(res, 400, 21603, "A 'From' phone number is required.");
    if (!p.Body) return twilioError(res, 400, 21602, "Message body is required.");
    if (!E164.test(p.To)) return twilioError(res, 400, 21211, `Invalid 'To' Phone Number: ${p.To.replace(/\d(?=\d{4})/g, "X")}`);
    if (p.Body.length > 1600) return twilioError(res, 400, 21617, "The concatenated message body exceeds the 1600 character limit.");
    const sid = twilioSid("SM");
    const date = new Date().toUTCString().replace("GMT", "+0000");
    sent.push({ sid, to: p.To, from: p.From, body: p.Body });
    sendJson(res, 201, {
      account_sid: o.accountSid,
      api_version: "2010-04-01",
      body: p.Body,
      date_created: date,
      date_sent: null,
      date_updated: date,
      direction: "outbound-api",
      error_code: null,
      error_message: null,
      from: p.From,
      messaging_service_sid: null,
      num_media: "0",
      num_segments: String(Math.max(1, Math.ceil(p.Body.length / 160))),
      price: null,
      price_unit: "USD",
      sid,
      status: "queued",
      subresource_uris: { media: `/2010-04-01/Accounts/${o.accountSid}/Messages/${sid}/Media.json` },
      to: p.To,
      uri: `/2010-04-01/Accounts/${o.accountSid}/Messages/${sid}.json`,
    });
  });

  return {
    url: server.origin,
    sent: sent.items,
    userSends(hookUrl, m, opts = {}) {
      const sid = m.sid ?? twilioSid("SM");
      const params: Record<string, string> = {
        ToCountry: "US",
        ToState: "CA",
        SmsMessageSid: sid,
        NumMedia: "0",
        ToCity: "",
        FromZip: "",
        SmsSid: sid,
        FromState: "",
        SmsStatus: "received",
        FromCity: "",
        Body: m.body,
        FromCountry: "US",
        To: m.to,
        ToZip: "",
        NumSegments: "1",
        MessageSid: sid,
        AccountSid: o.accountSid,
        From: m.from,
        ApiVersion: "2010-04-01",
      };
      const secret = opts.signWith === undefined ? o.authToken : opts.signWith;
      const headers: Record<string, string> = {
        "content-type": "application/x-www-form-urlencoded",
        "user-agent": "TwilioProxy/1.1",
        "i-twilio-idempotency-token": randomBytes(16).toString("hex"),
      };
      if (secret !== null) headers["x-twilio-signature"] = twilioSignature(secret, opts.signedUrl ?? hookUrl, params);
      return post(hookUrl, new URLSearchParams(params).toString(), headers);
    },
    waitForSent: (pred, timeoutMs = 5_000) => sent.waitFor(pred, timeoutMs, "twilio stand-in"),
    close: () => server.close(),
  };
}

// ---------------------------------------------------------------------------------------------
// Viber REST bot API

/** A message the bot sent: by send_message, or as the welcome message answering a conversation_started. */
export interface ViberSent {
  receiver: string;
  text: string;
  /** The label of a share-phone button under it, when it has one. */
  sharePhone?: string;
  body: Record<string, unknown>;
  authToken?: string;
}

/** A Viber user as the callbacks describe them. */
export interface ViberUser {
  id: string;
  name?: string;
}

export interface ViberApi {
  /** Give this to the client as VIBER_API_URL (https://chatapi.viber.com/pa, here). */
  url: string;
  /** Messages sent by send_message, in order. */
  sent: ViberSent[];
  /** Welcome messages our hook answered conversation_started callbacks with. */
  welcomes: ViberSent[];
  /** URLs given to set_webhook. */
  webhooks: string[];
  /** Plays the user opening the deep link viber://pa?chatURI=…&context=…: a signed conversation_started; records the welcome message answered. */
  opens(hookUrl: string, user: ViberUser, context?: string, opts?: { signWith?: string | null }): Promise<HookAnswer & { welcome?: ViberSent }>;
  /** The user sends a text message (which subscribes them to the bot). */
  userSends(hookUrl: string, user: ViberUser, text: string, opts?: { signWith?: string | null; token?: string }): Promise<HookAnswer>;
  /** The user taps the share-phone button: a `contact` message with their number. */
  sharesPhone(hookUrl: string, user: ViberUser, phone: string, opts?: { signWith?: string | null; token?: string }): Promise<HookAnswer>;
  /** POSTs any callback to our hook, signed with X-Viber-Content-Signature under the auth token, `signWith`, or unsigned (null). */
  deliver(hookUrl: string, payload: Record<string, unknown>, opts?: { signWith?: string | null }): Promise<HookAnswer>;
  waitForSent(pred: (m: ViberSent) => boolean, timeoutMs?: number): Promise<ViberSent>;
  close(): Promise<void>;
}

/** A 64-bit message token, as Viber's callbacks carry it (a JSON number beyond 2^53). */
const viberToken = () => (BigInt(`0x${randomBytes(8).toString("hex")}`) >> 1n).toString();

function viberSentOf(p: Record<string, unknown>, authToken?: string): ViberSent {
  const buttons = ((p.keyboard as { Buttons?: { ActionType?: unknown; Text?: unknown }[] } | undefined)?.Buttons ?? []).filter(
    (b) => b.ActionType === "share-phone",
  );
  return {
    receiver: String(p.receiver ?? ""),
    text: String(p.text ?? ""),
    ...(buttons.length ? { sharePhone: String(buttons[0].Text ?? "") } : {}),
    body: p,
    authToken,
  };
}

/** Checks a message the way send_message does: sender.name, type text with its text, share-phone only with min_api_version 3. */
function viberMessageProblem(p: Record<string, unknown>): [number, string] | undefined {
  const sender = p.sender as { name?: unknown } | undefined;
  if (typeof sender?.name !== "string" || sender.name === "" || sender.name.length > 28) return [3, "badData: sender.name"];
  if (p.type !== "text" || typeof p.text !== "string" || p.text === "") return [3, "badData: text"];
  if (p.keyboard !== undefined) {
    const k = p.keyboard as { Type?: unknown; Buttons?: { ActionType?: unknown }[] };
    if (k.Type !== "keyboard" || !Array.isArray(k.Buttons) || k.Buttons.length === 0) return [3, "badData: keyboard"];
    if (k.Buttons.some((b) => b.ActionType === "share-phone") && Number(p.min_api_version ?? 1) < 3) return [3, "badData: share-phone needs min_api_version 3"];
  }
  return undefined;
}

/** Starts a Viber REST bot API stand-in for one bot: users who have sent a message are subscribed (from the moment they send it), others get receiverNotSubscribed. */
export async function startViberApi(o: { authToken: string }): Promise<ViberApi> {
  const sent = new Recorded<ViberSent>();
  const welcomes: ViberSent[] = [];
  const webhooks: string[] = [];
  const subscribed = new Set<string>();
  const answer = (res: http.ServerResponse, status: number, message: string, extra: Record<string, unknown> = {}) =>
    sendJson(res, 200, { status, status_message: message, ...extra });

  const server = await listen((req, body, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    if (req.method !== "POST") return answer(res, 3, "badData");
    const token = req.headers["x-viber-auth-token"];
    if (token !== o.authToken) return answer(res, 2, "invalidAuthToken");
    const p = paramsOf(req, body);
    if (!p) return answer(res, 3, "badData");
    if (path === "/pa/set_webhook") {
      if (typeof p.url !== "string" || p.url === "") return answer(res, 1, "invalidUrl");
      webhooks.push(p.url);
      return answer(res, 0, "ok", { event_types: ["delivered", "seen", "failed", "subscribed", "unsubscribed", "conversation_started"] });
    }
    if (path !== "/pa/send_message") return answer(res, 3, "badData: unknown method");
    if (typeof p.receiver !== "string" || p.receiver === "") return answer(res, 4, "missingData: receiver");
    const problem = viberMessageProblem(p);
    if (problem) return answer(res, ...problem);
    if (!subscribed.has(p.receiver)) return answer(res, 6, "receiverNotSubscribed");
    sent.push(viberSentOf(p, token));
    answer(res, 0, "ok", { message_token: Number(viberToken()), chat_hostname: "SN-CHAT-01_" });
  });

  const deliver = (hookUrl: string, payload: Record<string, unknown>, opts: { signWith?: string | null } = {}) => {
    // message_token as a bare number, as Viber writes it (beyond a double's precision)
    const raw = JSON.stringify(payload).replace(/"message_token":"(\d+)"/, '"message_token":$1');
    const secret = opts.signWith === undefined ? o.authToken : opts.signWith;
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (secret !== null) headers["x-viber-content-signature"] = viberSignature(secret, raw);
    return post(hookUrl, raw, headers);
  };
  const userOf = (u: ViberUser) => ({ id: u.id, name: u.name ?? "Viber User", avatar: "", country: "LT", language: "en", api_version: 10 });
  const message = async (hookUrl: string, u: ViberUser, message: Record<string, unknown>, opts: { signWith?: string | null; token?: string } = {}) => {
    // as on Viber: a user who sent the bot a message is subscribed before the callback reaches us
    // (the bot's reply may go out before the callback's answer does)
    subscribed.add(u.id);
    const r = await deliver(
      hookUrl,
      {
        event: "message",
        timestamp: Date.now(),
        chat_hostname: "SN-CHAT-01_",
        message_token: opts.token ?? viberToken(),
        sender: userOf(u),
        message,
        silent: false,
      },
      opts,
    );
    return r;
  };
  return {
    url: `${server.origin}/pa`,
    sent: sent.items,
    welcomes,
    webhooks,
    async opens(hookUrl, u, context, opts) {
      const r = await deliver(
        hookUrl,
        {
          event: "conversation_started",
          timestamp: Date.now(),
          chat_hostname: "SN-CHAT-01_",
          message_token: viberToken(),
          type: "open",
          ...(context !== undefined ? { context } : {}),
          user: userOf(u),
          subscribed: subscribed.has(u.id),
        },
        opts,
      );
      let welcome: ViberSent | undefined;
      if (r.status === 200 && r.body) {
        const p = JSON.parse(r.body) as Record<string, unknown>;
        if (p.type !== undefined && !viberMessageProblem(p)) welcomes.push((welcome = viberSentOf({ ...p, receiver: u.id })));
      }
      return { ...r, welcome };
    },
    userSends: (hookUrl, u, text, opts) => message(hookUrl, u, { type: "text", text }, opts),
    sharesPhone: (hookUrl, u, phone, opts) =>
      message(hookUrl, u, { type: "contact", text: "share-phone", contact: { name: u.name ?? "Viber User", phone_number: phone } }, opts),
    deliver,
    waitForSent: (pred, timeoutMs = 5_000) => sent.waitFor(pred, timeoutMs, "viber stand-in"),
    close: () => server.close(),
  };
}

/** The provider accounts an e2e file configures: a Telegram bot, a WhatsApp business number, a Twilio number. */
export interface MessagingAccounts {
  tg: { token: string; bot: string; secret: string };
  wa: { phoneNumberId: string; accessToken: string; appSecret: string; number: string; verifyToken?: string };
  tw: { sid: string; token: string; number: string };
}

/** The Telegram, WhatsApp and Twilio stand-ins for these accounts, and the stack environment that points the service at them. */
export async function startMessagingProviders(a: MessagingAccounts): Promise<{ tg: TelegramApi; wa: WhatsAppApi; tw: TwilioApi; env: Record<string, string> }> {
  const [tg, wa, tw] = await Promise.all([
    startTelegramApi({ token: a.tg.token, botUsername: a.tg.bot }),
    startWhatsAppApi({ phoneNumberId: a.wa.phoneNumberId, accessToken: a.wa.accessToken, appSecret: a.wa.appSecret }),
    startTwilioApi({ accountSid: a.tw.sid, authToken: a.tw.token }),
  ]);
  const env: Record<string, string> = {
    TELEGRAM_API_URL: tg.url,
    TELEGRAM_BOT_TOKEN: a.tg.token,
    TELEGRAM_BOT_USERNAME: a.tg.bot,
    TELEGRAM_WEBHOOK_SECRET: a.tg.secret,
    WHATSAPP_API_URL: wa.url,
    WHATSAPP_PHONE_NUMBER: a.wa.number,
    WHATSAPP_PHONE_NUMBER_ID: a.wa.phoneNumberId,
    WHATSAPP_ACCESS_TOKEN: a.wa.accessToken,
    WHATSAPP_APP_SECRET: a.wa.appSecret,
    ...(a.wa.verifyToken ? { WHATSAPP_VERIFY_TOKEN: a.wa.verifyToken } : {}),
    TWILIO_API_URL: tw.url,
    TWILIO_ACCOUNT_SID: a.tw.sid,
    TWILIO_AUTH_TOKEN: a.tw.token,
    SMS_PHONE_NUMBER: a.tw.number,
    ALLOW_PRIVATE_TARGETS: "true", // the stand-ins are plain http on loopback
  };
  return { tg, wa, tw, env };
}
