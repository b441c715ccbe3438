// The keys an operator can find (docs/admin-cli.md): `tenant create` names its keys' ids, `key
// list` shows a tenant's keys (id, environment, prefix, created, last used, revoked; never the key),
// and `key revoke` takes a key's id or the key itself. Run as an operator runs the CLI.
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { adminCli } from "../support/admin-cli.ts";
import { api } from "../support/stack.ts";
import { useStack } from "../support/use-stack.ts";
import { expectError } from "../support/expect-error.ts";

const stack = useStack();
const ROOT = path.resolve(import.meta.dirname, "..", "..");

/** The CLI's text answer, or its failure (exit code and stderr). */
async function cliText(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)("npx", ["tsx", "scripts/admin.ts", ...args], {
      cwd: ROOT,
      env: { ...process.env, ADMIN_URL: stack.gateway.adminUrl, ADMIN_TOKEN: stack.gateway.adminToken, LOG_LEVEL: "silent" },
      timeout: 60_000,
    });
    return { code: 0, out: stdout, err: stderr };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    return { code: x.code, out: x.stdout, err: x.stderr };
  }
}

// each CLI run starts a Node process and compiles the CLI: seconds on a busy machine
/** A tenant made through the admin API the CLI calls (its keys and their ids). */
const tenant = async (name: string) => {
  const r = await stack.admin.createTenant({ name }, { headers: stack.adminHeaders });
  return { tenant_id: r.tenant!.id, live_key: r.liveKey, test_key: r.testKey, live_key_id: r.liveKeyId, test_key_id: r.testKeyId };
};
const listed = async (tenantId: string) => (await stack.admin.listApiKeys({ tenantId }, { headers: stack.adminHeaders })).keys;

// each CLI run starts a Node process and compiles the CLI: seconds on a busy machine
describe("an operator finds and revokes a tenant's keys", { timeout: 120_000 }, () => {
  it("tenant create names the key ids; key list shows both keys without the keys, and their last use", async () => {
    const t = await adminCli(stack, "tenant", "create", "--name", "Keys Ltd");
    expect(t.live_key_id).toMatch(/^key_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(t.test_key_id).toMatch(/^key_[0-9A-HJKMNP-TV-Z]{26}$/);

    const before = Date.now() - 1000;
    expect((await api(stack.url, t.test_key).get("/api/v1/verifications")).status).toBe(200);
    // written beside the request, not before its answer
    for (let i = 0; i < 100 && !(await listed(t.tenant_id))[1].lastUsedAt; i++) await new Promise((r) => setTimeout(r, 100));

    const keys = await adminCli(stack, "key", "list", "--tenant", t.tenant_id);
    expect(keys).toEqual([
      { key_id: t.live_key_id, env: "live", prefix: t.live_key.slice(0, 12), created_at: expect.any(String), last_used_at: null, revoked_at: null },
      {
        key_id: t.test_key_id,
        env: "test",
        prefix: t.test_key.slice(0, 12),
        created_at: expect.any(String),
        last_used_at: expect.any(String),
        revoked_at: null,
      },
    ]);
    expect(Date.parse(keys[1].last_used_at)).toBeGreaterThanOrEqual(before);
    expect(JSON.stringify(keys)).not.toContain(t.live_key);

    const text = await cliText("key", "list", "--tenant", t.tenant_id);
    expect(text.code).toBe(0);
    expect(text.out).toContain(`${t.live_key_id}  live  ${t.live_key.slice(0, 12)}…`);
    expect(text.out).toContain("last used never");
    expect(text.out).not.toContain(t.test_key);
  });

  it("key revoke takes the key itself or its id; the key is refused from then on", async () => {
    const t = await tenant("Revokes Ltd");
    const byKey = await adminCli(stack, "key", "revoke", "--key", t.test_key);
    expect(byKey).toEqual({ key_id: t.test_key_id, revoked_at: expect.any(String) });
    expectError(await api(stack.url, t.test_key).get("/api/v1/verifications"), 401, "unauthorized");

    const byId = await adminCli(stack, "key", "revoke", "--key", t.live_key_id);
    expect(byId.key_id).toBe(t.live_key_id);
    expectError(await api(stack.url, t.live_key).get("/api/v1/verifications"), 401, "unauthorized");
    expect((await listed(t.tenant_id)).every((k) => k.revokedAt)).toBe(true);
  });

  it("an unknown key, id or tenant is not found; another tenant's list holds only its own keys", async () => {
    const [a, b] = [await tenant("A"), await tenant("B")];
    expect((await listed(b.tenant_id)).map((k) => k.keyId)).toEqual([b.live_key_id, b.test_key_id]);

    const unknownKey = await cliText("key", "revoke", "--key", `pk_test_${"A".repeat(43)}`);
    expect(unknownKey.code).toBe(1);
    expect(unknownKey.err).toContain("API key not found");
    const admin = (f: () => Promise<unknown>) =>
      f().then(
        () => "answered",
        (e: Error) => e.message,
      );
    expect(await admin(() => stack.admin.revokeApiKey({ keyId: "key_01KGQ3Z3Y8R5F6G7H8J9K0M1N2" }, { headers: stack.adminHeaders }))).toContain(
      "API key not found",
    );
    expect(await admin(() => stack.admin.listApiKeys({ tenantId: "ten_01KGQ3Z3Y8R5F6G7H8J9K0M1N2" }, { headers: stack.adminHeaders }))).toContain(
      "tenant not found",
    );
    // nothing of A's was touched
    expect((await api(stack.url, a.test_key).get("/api/v1/verifications")).status).toBe(200);
  });
});
