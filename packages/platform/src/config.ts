import path from "node:path";
import { isSupportedCountry } from "libphonenumber-js";
import { isIP } from "node:net";
import ipaddr from "ipaddr.js";
import { z } from "zod";
import { type ConfigShape, isProviderUrl } from "./config-section.ts";
import { MESSAGING_CONFIG } from "./messaging/registry.ts";
import { isDataKeys } from "./personal-data.ts";

/** Service names and their default loopback gRPC ports. */
export const SERVICES = {
  verification: 50051,
  proof: 50052,
  session: 50053,
  domain: 50054,
  webhook: 50055,
  log: 50056,
} as const;
export type ServiceName = keyof typeof SERVICES;

const bool = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");
const port = z.coerce.number().int().min(0).max(65535);
const httpsUrl = z
  .string()
  .url()
  .regex(/^https:\/\//, "must be an https:// URL (internal calls are mutual TLS)")
  .optional();

const PROXY_NAMES = ["loopback", "linklocal", "uniquelocal"];
const proxyEntry = (v: string) => PROXY_NAMES.includes(v) || isIP(v) > 0 || (v.includes("/") && ipaddr.isValidCIDR(v));
/**
 * Which peers' X-Forwarded-For the gateway believes (Express "trust proxy"): unset = none; a hop
 * count; or a comma list of IPs, CIDRs and the names loopback, linklocal, uniquelocal.
 */
const trustProxy = z
  .string()
  .transform((v) =>
    v
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
  )
  .refine((list) => (list.length === 1 && /^\d{1,2}$/.test(list[0])) || (list.length > 0 && list.every(proxyEntry)), {
    message: "must be a hop count, or a comma list of IPs, CIDRs, loopback, linklocal or uniquelocal",
  })
  .transform((list): number | string[] => (/^\d+$/.test(list[0]) ? Number(list[0]) : list));

/** `host:port`, the host an IPv4 address, a name, or an IPv6 address in brackets. */
const hostPort = (v: string) => {
  const m = /^(\[([0-9a-fA-F:.]+)\]|[^\s:[\]]+):(\d{1,5})$/.exec(v);
  return !!m && Number(m[3]) > 0 && Number(m[3]) <= 65535 && (m[2] === undefined || isIP(m[2]) === 6);
};

const base = z
  .object({
    PORT: port.default(3000),
    HOST: z.string().default("0.0.0.0"),
    PUBLIC_BASE_URL: z.string().url().optional(),
    DATA_DIR: z.string().min(1).default("./data"),
    DATABASE_URL: z
      .string()
      .regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL")
      .optional(),
    REDIS_URL: z
      .string()
      .regex(/^rediss?:\/\//, "must be a redis:// URL")
      .optional(),
    LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
    DB_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
    // how long a read, or a transaction's statement before COMMIT, waits for its answer, 0 = none
    // (a Postgres that hangs, a black-holed connection); writes, COMMITs and migrations have no
    // limit. Far above any read of ours, far below TCP's own give-up (about 15 minutes)
    DATABASE_QUERY_TIMEOUT_MS: z.coerce.number().int().min(0).default(30_000),
    // `npm start`: processes serving the same ports (node:cluster); default (workers.ts workerPlan):
    // one per CPU with Postgres and Redis, less one beside a local database, else 1 (PGlite is
    // single-process; limits without Redis count per process)
    WORKERS: z.coerce.number().int().min(1).max(256).optional(),
    // resilience: waits for a late dependency (Postgres, Kafka, a peer's schema) back off up to this
    RETRY_BACKOFF_MAX_MS: z.coerce.number().int().min(10).default(5_000),
    // every Redis command gives up after this and the in-process fallback answers
    REDIS_TIMEOUT_MS: z.coerce.number().int().min(10).default(250),
    GRPC_HOST: z.string().default("127.0.0.1"),
    ADMIN_PORT: port.default(3001),
    // the admin listener's bind address: loopback unless ADMIN_TOKEN is set (checked below)
    ADMIN_HOST: z.string().default("127.0.0.1"),
    // a standalone service's Prometheus listener (GET /metrics); the all-in-one serves them on the admin listener
    METRICS_PORT: port.default(9464),
    METRICS_HOST: z.string().default("127.0.0.1"),
    // traces: OTLP/HTTP export when set (e.g. http://otel-collector:4318); unset: tracing off
    OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
    // the traces' service.name (default: icv for the all-in-one, icv-<service> for a standalone one)
    OTEL_SERVICE_NAME: z.string().min(1).optional(),
    // internal mTLS: one service's files (production), else generated per service into TLS_DIR
    TLS_DIR: z.string().min(1).optional(),
    TLS_CA_FILE: z.string().min(1).optional(),
    TLS_CERT_FILE: z.string().min(1).optional(),
    TLS_KEY_FILE: z.string().min(1).optional(),
    TLS_RELOAD_INTERVAL_MS: z.coerce.number().int().min(100).default(5_000),
    // internal teams calling the services over gRPC (docs/internal-clients.md): the client file
    // (JSON or YAML, reloaded on SIGHUP) and each client's default calls per minute (Redis, else per process)
    INTERNAL_CLIENTS_FILE: z.string().min(1).optional(),
    INTERNAL_CLIENT_RATE_PER_MINUTE: z.coerce.number().int().min(1).default(600),
    ADMIN_TOKEN: z.string().min(24, "must be at least 24 characters").optional(),
    PROOF_ISSUER: z.string().min(1).optional(),
    PROOF_KEY_ENCRYPTION_KEY: z
      .string()
      .refine((v) => Buffer.from(v, "base64").length === 32, "must be 32 bytes, base64-encoded")
      .optional(),
    LOG_KEY_ENCRYPTION_KEY: z
      .string()
      .refine((v) => Buffer.from(v, "base64").length === 32, "must be 32 bytes, base64-encoded")
      .optional(),
    // personal data at rest (docs/privacy.md): `base64` (key version 1) or `2:base64,1:base64` (the first seals)
    DATA_ENCRYPTION_KEY: z.string().refine(isDataKeys, "must be 32 bytes base64-encoded, or version:base64 pairs separated by commas").optional(),
    DATA_BLIND_INDEX_KEY: z
      .string()
      .refine((v) => Buffer.from(v, "base64").length >= 32, "must be at least 32 bytes, base64-encoded")
      .optional(),
    PROOF_KEY_BITS: z.coerce
      .number()
      .int()
      .refine((n) => [2048, 3072, 4096].includes(n), "must be 2048, 3072 or 4096")
      .default(2048),
    CHALLENGE_HMAC_KEY: z.string().min(32, "must be at least 32 characters").optional(),
    TRUST_PROXY: trustProxy.optional().transform((v): false | number | string[] => v ?? false),
    RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(100),
    AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().min(1).default(30),
    // outbound code sends (docs/send-limits.md)
    SEND_BUDGET_PER_HOUR: z.coerce.number().int().min(1).default(1000),
    SMS_ALLOWED_COUNTRIES: z
      .string()
      .regex(/^[A-Za-z]{2}(\s*,\s*[A-Za-z]{2})*$/, "must be ISO 3166 alpha-2 country codes separated by commas, e.g. LT,LV,EE")
      .transform((v) => v.split(",").map((c) => c.trim().toUpperCase()))
      .refine((list) => list.every((c) => isSupportedCountry(c)), "names a country code without phone numbers")
      .optional(),
    API_KEY_CACHE_TTL_MS: z.coerce.number().int().min(0).default(10_000),
    // the gateway's public listener against clients that hold connections (docs/configuration.md)
    HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(500).default(15_000),
    HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(500).default(10_000),
    HTTP_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(100).default(65_000),
    HTTP_MAX_CONNECTIONS_PER_IP: z.coerce.number().int().min(0).default(256),
    SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).default(5_000),
    SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(0).default(10_000),
    // the development tenant on a first start: by default only on the embedded database (see parseConfig)
    BOOTSTRAP_DEV_TENANT: bool.optional(),
    // events: the postgres transport (outbox tables, LISTEN/NOTIFY) unless KAFKA_BROKERS is set
    KAFKA_BROKERS: z
      .string()
      .regex(/^[^\s,]+:\d+(,[^\s,]+:\d+)*$/, "must be host:port[,host:port…]")
      .transform((v) => v.split(","))
      .optional(),
    KAFKA_CLIENT_ID: z.string().min(1).default("icv"),
    KAFKA_TOPIC_PREFIX: z
      .string()
      .regex(/^[A-Za-z0-9._-]*$/, "may hold only letters, digits, '.', '_' and '-'")
      .default("icv."),
    EVENT_POLL_INTERVAL_MS: z.coerce.number().int().min(10).default(1_000),
    // wake-ups within this window after a run are coalesced into the next run (batches under load)
    EVENT_BATCH_WINDOW_MS: z.coerce.number().int().min(0).max(1_000).default(10),
    // webhooks and every other outbound URL
    ALLOW_PRIVATE_TARGETS: bool.default(false),
    WEBHOOK_RETRY_DELAYS_MS: z
      .string()
      .regex(/^\d+(,\d+)*$/, "must be comma-separated milliseconds between attempts, e.g. 30000,120000")
      .transform((v) => v.split(",").map(Number))
      .optional(),
    WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
    WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(50),
    // a tenant endpoint failing every attempt this long is disabled (default 5 days)
    WEBHOOK_DISABLE_AFTER_MS: z.coerce
      .number()
      .int()
      .min(1)
      .default(5 * 24 * 3_600_000),
    // server-sent events
    SSE_MAX_CONNECTIONS_PER_TENANT: z.coerce.number().int().min(1).default(10),
    SSE_HEARTBEAT_MS: z.coerce.number().int().min(100).default(30_000),
    // providers: the messaging providers' keys come from their files (messaging/registry.ts), the
    // verification channels' keys (SMTP, OAuth apps, Kraken) from theirs, given to parseConfig as a
    // section by the processes that run the verification service; a channel whose provider is
    // unset is unavailable for live keys
    // domain checks (docs/domains.md): the resolvers that find a domain's name servers and
    // addresses (comma list of host:port; default the system's), the port the authoritative
    // servers are asked on, one DNS query's timeout, the HTTP file's ports, and how long a
    // provider-written record is waited for
    DNS_RESOLVERS: z
      .string()
      .transform((v) =>
        v
          .split(",")
          .map((s) => s.trim())
          .filter(Boolean),
      )
      .refine((list) => list.length > 0 && list.every(hostPort), "must be a comma list of host:port (IPv6 as [addr]:port)")
      .optional(),
    DNS_AUTHORITATIVE_PORT: port.refine((n) => n > 0, "must be a port number").default(53),
    DNS_QUERY_TIMEOUT_MS: z.coerce.number().int().min(50).max(30_000).default(2_000),
    // questions in flight to one authoritative name server at most, per domain-service process
    DNS_MAX_INFLIGHT_PER_SERVER: z.coerce.number().int().min(1).max(1_000).default(8),
    // scheduled domain re-checks: the shortest recheck_interval a create may ask (seconds), how
    // often the sweeper looks for due ones, and how many one sweep claims
    RECHECK_MIN_INTERVAL_S: z.coerce.number().int().min(1).default(3_600),
    RECHECK_SWEEP_MS: z.coerce.number().int().min(50).default(5_000),
    RECHECK_BATCH: z.coerce.number().int().min(1).max(10_000).default(50),
    DOMAIN_HTTP_PORT: port.refine((n) => n > 0, "must be a port number").default(80),
    DOMAIN_HTTPS_PORT: port.refine((n) => n > 0, "must be a port number").default(443),
    DNS_PROPAGATION_TIMEOUT_MS: z.coerce.number().int().min(0).max(120_000).default(8_000),
    // the DNS hosts' API base URLs (tests point them at local servers speaking each API)
    DNS_API_CLOUDFLARE_URL: z.string().url().default("https://api.cloudflare.com/client/v4"),
    DNS_API_DIGITALOCEAN_URL: z.string().url().default("https://api.digitalocean.com/v2"),
    DNS_API_GODADDY_URL: z.string().url().default("https://api.godaddy.com/v1"),
    DNS_API_ROUTE53_URL: z.string().url().default("https://route53.amazonaws.com/2013-04-01"),
    // wallets: smart-contract wallet signatures (ERC-1271, ERC-6492) are checked by eth_call on this
    // Ethereum JSON-RPC node; unset, ethereum signatures are checked locally (EOA only)
    ETHEREUM_RPC_URL: z
      .string()
      .regex(/^https?:\/\/[^\s]+$/, "must be an http:// or https:// JSON-RPC URL")
      .optional(),
    ETHEREUM_RPC_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5_000),
  })
  .extend(MESSAGING_CONFIG);

/**
 * Per service: <NAME>_GRPC_PORT (listen), <NAME>_URL (callers' address), <NAME>_DATABASE_URL,
 * <NAME>_HEALTH_PORT (a plain grpc.health.v1 listener for probes; unset: none).
 */
const perService = z.object({
  GATEWAY_DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL")
    .optional(),
  ...(Object.fromEntries(
    Object.keys(SERVICES).flatMap((s) => {
      const up = s.toUpperCase();
      return [
        [`${up}_GRPC_PORT`, port.optional()],
        [`${up}_URL`, httpsUrl],
        [`${up}_HEALTH_PORT`, port.optional()],
        [
          `${up}_DATABASE_URL`,
          z
            .string()
            .regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL")
            .optional(),
        ],
      ];
    }),
  ) as Record<string, z.ZodOptional<z.ZodType>>),
});
const schema = base.extend(perService.shape);

type Base = z.infer<typeof base>;
export type Config = Base & {
  publicBaseUrl: string;
  issuer: string;
  servicePort(name: ServiceName): number;
  serviceUrl(name: ServiceName): string;
  databaseUrl(name: ServiceName | "gateway"): string | undefined;
  healthPort(name: ServiceName): number | undefined;
  /** The directory of generated certificates (TLS_DIR, default <DATA_DIR>/tls). */
  tlsDir: string;
  /** Make and print a development tenant on a start with none: BOOTSTRAP_DEV_TENANT, default true only on the embedded database. */
  BOOTSTRAP_DEV_TENANT: boolean;
  /** Set by a service's own entry (runAlone): this process hosts that service only, the others run elsewhere. */
  alone?: ServiceName | "gateway";
};

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

export class ConfigError extends Error {}

/**
 * Every variable the config reads itself; with the sections' keys, `.env.example` lists each one
 * (packages/platform/test/env-example.test.ts checks, with the verification channels' section).
 */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(schema.shape);

export { providerUrl, settingsOf, type ConfigShape, type SettingsOf } from "./config-section.ts";

/**
 * Parses and validates the environment once, with the sections of the code this process runs
 * (the verification channels' CHANNEL_CONFIG): their keys are validated and kept like the
 * config's own. Throws ConfigError with a one-line message naming the variable.
 */
export function parseConfig(env: Record<string, string | undefined> = process.env, ...sections: ConfigShape[]): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const full = sections.reduce<z.ZodObject<ConfigShape>>((s, section) => s.extend(section), schema);
  const r = full.safeParse(cleaned);
  if (!r.success) {
    const issue = r.error.issues[0];
    const name = String(issue.path[0] ?? "environment");
    throw new ConfigError(`invalid configuration: ${name} ${issue.message.replace(/^Invalid input: /, "")}`);
  }
  const c = r.data as Base & Record<string, unknown>;
  const tlsFiles = [c.TLS_CA_FILE, c.TLS_CERT_FILE, c.TLS_KEY_FILE].filter(Boolean).length;
  if (tlsFiles !== 0 && tlsFiles !== 3)
    throw new ConfigError("invalid configuration: TLS_CA_FILE must be set together with TLS_CERT_FILE and TLS_KEY_FILE (all three or none)");
  if (!LOOPBACK.test(c.ADMIN_HOST) && !c.ADMIN_TOKEN)
    throw new ConfigError("invalid configuration: ADMIN_TOKEN is required when ADMIN_HOST is not a loopback address");
  // provider endpoints (the keys declared with providerUrl) come from configuration only; a
  // plain-http one is a stand-in (tests, local development)
  for (const [name, key] of Object.entries(full.shape)) {
    if (!isProviderUrl(key)) continue;
    const v = c[name] as string | undefined;
    if (v && !v.startsWith("https://") && !c.ALLOW_PRIVATE_TARGETS)
      throw new ConfigError(`invalid configuration: ${name} must be an https:// URL (http:// only with ALLOW_PRIVATE_TARGETS=true, for a local stand-in)`);
  }
  const publicBaseUrl = (c.PUBLIC_BASE_URL ?? `http://localhost:${c.PORT}`).replace(/\/+$/, "");
  const servicePort = (name: ServiceName) => (c[`${name.toUpperCase()}_GRPC_PORT`] as number | undefined) ?? SERVICES[name];
  return {
    ...c,
    publicBaseUrl,
    issuer: c.PROOF_ISSUER ?? publicBaseUrl,
    servicePort,
    serviceUrl: (name) => (c[`${name.toUpperCase()}_URL`] as string | undefined) ?? `https://127.0.0.1:${servicePort(name)}`,
    healthPort: (name) => c[`${name.toUpperCase()}_HEALTH_PORT`] as number | undefined,
    tlsDir: c.TLS_DIR ?? path.join(c.DATA_DIR, "tls"),
    // on a Postgres (production) a first start makes no tenant and prints no keys unless asked
    BOOTSTRAP_DEV_TENANT: c.BOOTSTRAP_DEV_TENANT ?? !((c.GATEWAY_DATABASE_URL as string | undefined) ?? c.DATABASE_URL),
    databaseUrl: (name) => (c[`${name.toUpperCase()}_DATABASE_URL`] as string | undefined) ?? c.DATABASE_URL,
  };
}

/** For entry points: parse (with the sections of the code this process runs), or print one line and exit 1. */
export function loadConfig(env: Record<string, string | undefined> = process.env, ...sections: ConfigShape[]): Config {
  try {
    return parseConfig(env, ...sections);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${e.message}\n`);
      process.exit(1);
    }
    throw e;
  }
}
