// The admin CLI: `npm run --silent admin -- <verb> [options]`. Talks to the running gateway's
// admin port with the admin token (ADMIN_TOKEN, or the one generated into DATA_DIR).
import { readFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { createClient, ConnectError } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { AdminService } from "@icv/contracts/gen/icv/gateway/v1/admin_service_pb.ts";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import type { EnvironmentWebhooks } from "@icv/contracts/gen/icv/webhook/v1/webhook_service_pb.ts";
import { iso, loadConfig } from "@icv/platform";
import { internalClient } from "./admin/internal-client.ts";
import { rotateDataKey } from "./admin/data-key.ts";

const USAGE = `usage: npm run --silent admin -- <command> [--json]
  tenant create --name NAME        create a tenant; prints its live and test keys (shown once) with their ids, and webhook secrets
  tenant list                      list tenants
  tenant set --tenant ID --env live|test --retention-days N
                                   redact that environment's settled verifications older than N days (1–3650; 0: keep)
  tenant show --tenant ID          the tenant's retention of both environments
  data-key rotate                  a new DATA_ENCRYPTION_KEY version (in the data dir, or printed to set); after a restart
                                   new data is sealed with it and every row is re-sealed in the background
  key list --tenant ID             a tenant's keys: id, environment, prefix, created, last used, revoked (never the keys)
  key create --tenant ID --env live|test
                                   create another API key for a tenant
  key revoke --key KEY_ID|KEY      revoke an API key, named by its id (key_…) or the key itself (pk_…);
                                   refused everywhere within the key cache TTL
  signing-key rotate [--env live|test]
                                   new proof signing key of that set (default live: jwks.json; test: jwks-test.json);
                                   the old one stays published in its set while its proofs live
  webhook set --tenant ID --env live|test --url URL
                                   the tenant's webhook endpoint for that environment (gets every webhook event)
  webhook show --tenant ID         the tenant's webhook endpoints and signing secrets
  webhook remove --tenant ID --env live|test
                                   remove the endpoint of that environment
  webhook enable --tenant ID --env live|test
                                   re-enable an endpoint disabled after failing every attempt for 5 days
  webhook-secret rotate --tenant ID --env live|test
                                   new webhook secret; the previous one keeps signing alongside it for 24 h
  console-user invite --tenant ID --email EMAIL --role admin|developer|viewer
                                   a single-use link (24 h) for a person to register a passkey for the tenant console
  internal-client cert --name NAME --out DIR [--days N]
                                   a client certificate for an internal team (NAME.crt, NAME.key, ca.crt) signed
                                   by the data dir's CA (default 90 days); needs no running service
  internal-client list [--file FILE]
                                   the clients of INTERNAL_CLIENTS_FILE and the RPCs each may call
environment: ADMIN_URL (default http://127.0.0.1:$ADMIN_PORT), ADMIN_TOKEN (default: read from $DATA_DIR/secrets/admin-token)`;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    name: { type: "string" },
    tenant: { type: "string" },
    env: { type: "string" },
    key: { type: "string" },
    url: { type: "string" },
    out: { type: "string" },
    days: { type: "string" },
    "retention-days": { type: "string" },
    file: { type: "string" },
    email: { type: "string" },
    role: { type: "string" },
    json: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  },
});

function fail(msg: string): never {
  process.stderr.write(`${msg}\n`);
  process.exit(1);
}

if (values.help || positionals.length < 2) fail(USAGE);
const config = loadConfig();
const print = (json: unknown, text: string): void => void process.stdout.write(`${values.json ? JSON.stringify(json, null, 2) : text}\n`);
if (positionals[0] === "data-key" && positionals[1] === "rotate") {
  rotateDataKey(config, print, fail);
  process.exit(0);
}
if (positionals[0] === "internal-client") {
  await internalClient(config, { verb: positionals[1], ...values }, print, fail);
  process.exit(0);
}
let token = process.env.ADMIN_TOKEN;
if (!token) {
  try {
    token = readFileSync(path.join(config.DATA_DIR, "secrets", "admin-token"), "utf8").trim();
  } catch {
    fail(`no admin token: set ADMIN_TOKEN, or run with the DATA_DIR of the running service (${config.DATA_DIR})`);
  }
}
const baseUrl = process.env.ADMIN_URL ?? `http://127.0.0.1:${config.ADMIN_PORT}`;
const admin = createClient(AdminService, createConnectTransport({ baseUrl, httpVersion: "1.1" }));
const headers = { authorization: `Bearer ${token}` };

const environment = (verb: string): Environment => {
  if (!values.tenant || (values.env !== "live" && values.env !== "test")) fail(`${verb} needs --tenant ID --env live|test`);
  return values.env === "live" ? Environment.LIVE : Environment.TEST;
};

/** One environment's webhook settings as JSON and as text lines. */
function webhookSettings(w: EnvironmentWebhooks | undefined) {
  const env = w?.environment === Environment.LIVE ? "live" : "test";
  const json = {
    environment: env,
    url: w?.url || null,
    url_updated_at: iso(w?.urlUpdatedAt) ?? null,
    secret: w?.secret || null,
    secret_created_at: iso(w?.secretCreatedAt) ?? null,
    previous_secret: w?.previousSecret || null,
    previous_secret_expires_at: iso(w?.previousSecretExpiresAt) ?? null,
    failing_since: iso(w?.failingSince) ?? null,
    disabled_at: iso(w?.disabledAt) ?? null,
    disabled_reason: w?.disabledReason || null,
  };
  const text = [
    `${env} endpoint ${json.url ?? "(none)"}${json.disabled_at ? ` DISABLED at ${json.disabled_at}: ${json.disabled_reason}` : ""}`,
    `${env} webhook secret ${json.secret ?? "(none)"}`,
    ...(json.previous_secret ? [`${env} previous secret ${json.previous_secret} (signs until ${json.previous_secret_expires_at})`] : []),
  ].join("\n");
  return { json, text };
}

async function run(): Promise<void> {
  const [noun, verb] = positionals;
  switch (`${noun} ${verb}`) {
    case "tenant create": {
      if (!values.name) fail("tenant create needs --name NAME");
      const r = await admin.createTenant({ name: values.name }, { headers });
      const t = r.tenant!;
      return print(
        {
          tenant_id: t.id,
          name: t.name,
          created_at: iso(t.createdAt),
          live_key: r.liveKey,
          live_key_id: r.liveKeyId,
          test_key: r.testKey,
          test_key_id: r.testKeyId,
          live_webhook_secret: r.liveWebhookSecret,
          test_webhook_secret: r.testWebhookSecret,
        },
        [
          `tenant ${t.id} (${t.name})`,
          `live key ${r.liveKeyId} ${r.liveKey}`,
          `test key ${r.testKeyId} ${r.testKey}`,
          `live webhook secret ${r.liveWebhookSecret}`,
          `test webhook secret ${r.testWebhookSecret}`,
          "The keys are shown only now (their ids stay: key list, key revoke).",
        ].join("\n"),
      );
    }
    case "tenant set": {
      const env = environment("tenant set");
      const days = values["retention-days"];
      if (days === undefined || !/^\d{1,5}$/.test(days)) fail("tenant set needs --retention-days N (1 to 3650; 0 clears it)");
      const r = await admin.setTenantRetention({ tenantId: values.tenant, environment: env, retentionDays: Number(days) }, { headers });
      return print(
        { tenant_id: values.tenant, env: values.env, retention_days: r.retentionDays || null },
        r.retentionDays ? `${values.env} retention: ${r.retentionDays} days` : `${values.env} retention: none`,
      );
    }
    case "tenant show": {
      if (!values.tenant) fail("tenant show needs --tenant ID");
      const r = await admin.getTenantRetention({ tenantId: values.tenant }, { headers });
      const days = (d: number) => (d ? `${d} days` : "none");
      return print(
        { tenant_id: values.tenant, live: { retention_days: r.liveRetentionDays || null }, test: { retention_days: r.testRetentionDays || null } },
        `live retention: ${days(r.liveRetentionDays)}\ntest retention: ${days(r.testRetentionDays)}`,
      );
    }
    case "tenant list": {
      const r = await admin.listTenants({}, { headers });
      const rows = r.tenants.map((t) => ({ tenant_id: t.id, name: t.name, created_at: iso(t.createdAt) }));
      return print(rows, rows.map((t) => `${t.tenant_id}  ${t.created_at}  ${t.name}`).join("\n") || "(no tenants)");
    }
    case "key create": {
      if (!values.tenant || (values.env !== "live" && values.env !== "test")) fail("key create needs --tenant ID --env live|test");
      const r = await admin.createApiKey({ tenantId: values.tenant, environment: values.env === "live" ? Environment.LIVE : Environment.TEST }, { headers });
      return print({ key_id: r.keyId, key: r.key }, `key ${r.keyId}\n${r.key}\nThe key is shown only now.`);
    }
    case "key list": {
      if (!values.tenant) fail("key list needs --tenant ID");
      const r = await admin.listApiKeys({ tenantId: values.tenant }, { headers });
      const rows = r.keys.map((k) => ({
        key_id: k.keyId,
        env: k.environment === Environment.LIVE ? "live" : "test",
        prefix: k.prefix,
        created_at: iso(k.createdAt),
        last_used_at: iso(k.lastUsedAt) ?? null,
        revoked_at: iso(k.revokedAt) ?? null,
      }));
      const line = (k: (typeof rows)[number]) =>
        `${k.key_id}  ${k.env}  ${k.prefix}…  created ${k.created_at}  last used ${k.last_used_at ?? "never"}${k.revoked_at ? `  REVOKED ${k.revoked_at}` : ""}`;
      return print(rows, rows.map(line).join("\n") || "(no keys)");
    }
    case "key revoke": {
      if (!values.key) fail("key revoke needs --key KEY_ID or --key KEY");
      // the key itself (pk_live_…/pk_test_…) is found by its hash; anything else is an id
      const by = /^pk_(live|test)_/.test(values.key) ? { key: values.key } : { keyId: values.key };
      const r = await admin.revokeApiKey(by, { headers });
      return print({ key_id: r.keyId, revoked_at: iso(r.revokedAt) }, `revoked ${r.keyId} at ${iso(r.revokedAt)}`);
    }
    case "signing-key rotate": {
      const env = values.env ?? "live";
      if (env !== "live" && env !== "test") fail("signing-key rotate takes --env live|test (default live)");
      const r = await admin.rotateSigningKey({ environment: env === "live" ? Environment.LIVE : Environment.TEST }, { headers });
      return print(
        { environment: env, kid: r.kid, retired_kid: r.retiredKid || null },
        `new ${env} signing key ${r.kid}${r.retiredKid ? ` (retired ${r.retiredKid})` : ""}`,
      );
    }
    case "webhook set": {
      const env = environment("webhook set");
      if (!values.url) fail("webhook set needs --url URL");
      const w = webhookSettings((await admin.setWebhookEndpoint({ tenantId: values.tenant, environment: env, url: values.url }, { headers })).webhooks);
      return print(w.json, w.text);
    }
    case "webhook show": {
      if (!values.tenant) fail("webhook show needs --tenant ID");
      const r = await admin.getWebhookSettings({ tenantId: values.tenant }, { headers });
      const [live, test] = [webhookSettings(r.live), webhookSettings(r.test)];
      return print({ tenant_id: values.tenant, live: live.json, test: test.json }, `${live.text}\n${test.text}`);
    }
    case "webhook remove": {
      const env = environment("webhook remove");
      const r = await admin.removeWebhookEndpoint({ tenantId: values.tenant, environment: env }, { headers });
      return print({ removed_url: r.removedUrl }, `removed ${values.env} endpoint ${r.removedUrl}`);
    }
    case "webhook enable": {
      const env = environment("webhook enable");
      const w = webhookSettings((await admin.enableWebhookEndpoint({ tenantId: values.tenant, environment: env }, { headers })).webhooks);
      return print(w.json, w.text);
    }
    case "webhook-secret rotate": {
      const env = environment("webhook-secret rotate");
      const w = webhookSettings((await admin.rotateWebhookSecret({ tenantId: values.tenant, environment: env }, { headers })).webhooks);
      return print(w.json, w.text);
    }
    case "console-user invite": {
      if (!values.tenant || !values.email || !values.role) fail("console-user invite needs --tenant ID --email EMAIL --role admin|developer|viewer");
      const r = await admin.inviteConsoleUser({ tenantId: values.tenant, email: values.email, role: values.role }, { headers });
      return print(
        { invite_url: r.inviteUrl, user_id: r.userId, expires_at: r.expiresAt ? iso(r.expiresAt) : null },
        `invite for ${values.email} (${values.role}), single use, until ${r.expiresAt ? iso(r.expiresAt) : "?"}:\n${r.inviteUrl}`,
      );
    }
    default:
      fail(USAGE);
  }
}

run().catch((e) => {
  const ce = ConnectError.from(e);
  fail(`admin ${positionals.join(" ")} failed: ${ce.rawMessage}${ce.code === 14 ? ` (is the service running with its admin port at ${baseUrl}?)` : ""}`);
});
