/**
 * LISTEN sessions shared by every Database of the process that connects to the same server and
 * database: one dedicated client listens to all channels asked for (the relays' `icv_outbox`,
 * the event sources' `icv_events`), reconnected on error. Postgres wakes every listening session
 * of a database on each NOTIFY, whatever its channel: one session per process instead of one
 * per service and channel makes each NOTIFY wake one backend here, not seven (issue 33).
 */
import pg from "pg";

type OnNotify = (payload: string) => void;

interface Session {
  client?: pg.Client;
  /** the connection (and the LISTENs of the channels wanted then) under way */
  ready?: Promise<void>;
  channels: Map<string, Set<OnNotify>>;
  retry?: NodeJS.Timeout;
}

const sessions = new Map<string, Session>();

/** Which server, database and role a client of `options` reaches: one session each. */
const sessionKey = (o: pg.ClientConfig): string => o.connectionString ?? JSON.stringify([o.host, o.port, o.database, o.user]);

/** Listens to `channel` on the process's session for the database `options` reach; answers the unlisten. */
export async function listenShared(options: pg.ClientConfig, channel: string, onNotify: OnNotify): Promise<() => Promise<void>> {
  const key = sessionKey(options);
  let s = sessions.get(key);
  if (!s) {
    s = { channels: new Map() };
    sessions.set(key, s);
  }
  const session = s;
  let set = session.channels.get(channel);
  const fresh = !set;
  if (!set) {
    set = new Set();
    session.channels.set(channel, set);
  }
  set.add(onNotify);
  try {
    if (!session.client && !session.ready) {
      // a reconnection waiting for its turn is made now
      clearTimeout(session.retry);
      session.retry = undefined;
      await connect(key, session, options);
    } else {
      await session.ready;
      if (fresh && session.client) await session.client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    }
  } catch (e) {
    await unlisten(key, session, channel, onNotify);
    throw e;
  }
  let done = false;
  return async () => {
    if (done) return;
    done = true;
    await unlisten(key, session, channel, onNotify);
  };
}

function connect(key: string, s: Session, options: pg.ClientConfig): Promise<void> {
  const c = new pg.Client(options);
  s.client = c;
  c.on("notification", (n) => {
    for (const fn of s.channels.get(n.channel) ?? []) fn(n.payload ?? "");
  });
  c.on("error", () => {
    c.end().catch(() => undefined);
    if (s.client !== c) return;
    s.client = undefined;
    reconnectLater(key, s, options);
  });
  s.ready = (async () => {
    await c.connect();
    for (const channel of s.channels.keys()) await c.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
  })().finally(() => {
    s.ready = undefined;
  });
  return s.ready.catch((e) => {
    if (s.client === c) s.client = undefined;
    c.end().catch(() => undefined);
    throw e;
  });
}

function reconnectLater(key: string, s: Session, options: pg.ClientConfig): void {
  // one reconnection at a time: a client's error and its failed connect may both ask for one
  if (sessions.get(key) !== s || s.retry) return;
  s.retry = setTimeout(() => {
    s.retry = undefined;
    if (sessions.get(key) === s) connect(key, s, options).catch(() => reconnectLater(key, s, options));
  }, 1_000);
  s.retry.unref();
}

async function unlisten(key: string, s: Session, channel: string, onNotify: OnNotify): Promise<void> {
  const set = s.channels.get(channel);
  set?.delete(onNotify);
  if (set && !set.size) {
    s.channels.delete(channel);
    if (s.channels.size && s.client && !s.ready) await s.client.query(`UNLISTEN ${pg.escapeIdentifier(channel)}`).catch(() => undefined);
  }
  if (s.channels.size) return;
  // the last listener went: the session closes
  if (sessions.get(key) === s) sessions.delete(key);
  clearTimeout(s.retry);
  const c = s.client;
  s.client = undefined;
  await c?.end().catch(() => undefined);
}
