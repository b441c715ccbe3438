// Signing-key rotation (proofs signed before it stay valid, online and offline) and the admin
// CLI run as an operator runs it, against the running stack.
import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const stack = useStack();
const t = useTenant(stack, "Rotation");
let c: ReturnType<typeof api>;

beforeAll(() => {
  c = api(stack.url, t.testKey);
});

/** create + test-verify: a fresh (test) proof token, signed by the test key set. */
async function proof(identifier: string): Promise<{ id: string; token: string }> {
  const v = await c.post("/api/v1/verifications", { type: "phone", channel: "telegram", identifier });
  expect(v.status).toBe(201);
  const done = await c.post(`/api/v1/verifications/${v.body.id}/test-verify`);
  expect(done.status).toBe(200);
  return { id: v.body.id, token: done.body.proof_token };
}

const kidOf = (token: string) => decodeProtectedHeader(token).kid as string;
const jwks = async () => (await api(stack.url).get("/.well-known/jwks-test.json")).body as { keys: { kid: string }[] };
const liveJwks = async () => (await api(stack.url).get("/.well-known/jwks.json")).body as { keys: { kid: string }[] };

/** Runs the admin CLI the way an operator does (as `npm run admin` runs it), pointed at this stack's admin port. */
async function adminCli(...args: string[]): Promise<any> {
  const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", "scripts/admin.ts", ...args], {
    cwd: ROOT,
    env: { ...process.env, ADMIN_URL: stack.gateway.adminUrl, ADMIN_TOKEN: stack.gateway.adminToken, LOG_LEVEL: "silent" },
    timeout: 60_000,
  });
  return JSON.parse(stdout);
}

describe("signing-key rotation (of the test set: these are test proofs)", () => {
  it("signs new proofs with a new kid while proofs of the old key still validate online and offline", async () => {
    const before = await proof("+37069100030");
    const kidA = kidOf(before.token);
    expect((await jwks()).keys.map((k) => k.kid)).toContain(kidA);

    const rotated = await stack.admin.rotateSigningKey({ environment: Environment.TEST }, { headers: stack.adminHeaders });
    expect(rotated.kid).toBeTruthy();
    expect(rotated.kid).not.toBe(kidA);
    expect(rotated.retiredKid).toBe(kidA);

    const after = await proof("+37069100031");
    const kidB = kidOf(after.token);
    expect(kidB).toBe(rotated.kid);
    expect(kidB).not.toBe(kidA);

    const set = await jwks();
    const kids = set.keys.map((k) => k.kid);
    expect(kids).toContain(kidA);
    expect(kids).toContain(kidB);

    for (const p of [before, after]) {
      const online = await c.post("/api/v1/proofs/validate", { proof_token: p.token });
      expect(online.body).toMatchObject({ valid: true, verification: { id: p.id } });
      const { payload, protectedHeader } = await jwtVerify(p.token, createLocalJWKSet(set as never), { algorithms: ["RS256"] });
      expect(payload.sub).toBe(p.id);
      expect(protectedHeader.kid).toBe(kidOf(p.token));
    }
    // the old proof's status is unchanged by the rotation
    const status = await c.get(`/api/v1/proofs/${before.id}/status`);
    expect(status.body).toMatchObject({ is_valid: true, is_revoked: false });
  });

  it("a token whose kid is not in the key set is refused", async () => {
    const p = await proof("+37069100032");
    const [h, body, sig] = p.token.split(".");
    const header = JSON.parse(Buffer.from(h, "base64url").toString());
    const forged = [Buffer.from(JSON.stringify({ ...header, kid: "no-such-kid" })).toString("base64url"), body, sig].join(".");
    const r = await c.post("/api/v1/proofs/validate", { proof_token: forged });
    expect(r.status).toBe(200);
    expect(r.body.valid).toBe(false);
    expect(["unknown_key", "invalid_signature"]).toContain(r.body.reason);
  });
});

describe("the admin CLI", () => {
  it("tenant create --json prints keys that work against the API", async () => {
    const out = await adminCli("tenant", "create", "--name", "CLI tenant", "--json");
    expect(out.tenant_id).toMatch(/^ten_[0-9A-Z]{26}$/);
    expect(out.live_key).toMatch(/^pk_live_[0-9A-Za-z]{43}$/);
    expect(out.test_key).toMatch(/^pk_test_[0-9A-Za-z]{43}$/);

    const test = api(stack.url, out.test_key);
    const created = await test.post("/api/v1/verifications", { type: "phone", channel: "sms", identifier: "+37069100033" });
    expect(created.status).toBe(201);
    const verified = await test.post(`/api/v1/verifications/${created.body.id}/test-verify`);
    expect(verified.status).toBe(200);
    const { payload } = await jwtVerify(verified.body.proof_token, createLocalJWKSet((await jwks()) as never), { algorithms: ["RS256"] });
    expect(payload.tenant_id).toBe(out.tenant_id);
    expect(payload.env).toBe("test");

    const live = api(stack.url, out.live_key);
    const list = await live.get("/api/v1/verifications");
    expect(list.status).toBe(200);
    expect(list.body.pagination.total).toBe(0);
    // the new tenant sees none of the other tenant's data
    expect((await test.get("/api/v1/verifications")).body.data.map((v: { id: string }) => v.id)).toEqual([created.body.id]);
  });

  it("signing-key rotate --env test --json rotates the key the API signs test proofs with", async () => {
    const kidBefore = kidOf((await proof("+37069100034")).token);
    const liveBefore = (await liveJwks()).keys.map((k) => k.kid);
    const out = await adminCli("signing-key", "rotate", "--env", "test", "--json");
    expect(out.environment).toBe("test");
    expect(out.kid).toBeTruthy();
    expect(out.kid).not.toBe(kidBefore);
    expect(out.retired_kid).toBe(kidBefore);
    expect(kidOf((await proof("+37069100035")).token)).toBe(out.kid);
    expect((await jwks()).keys.map((k) => k.kid)).toEqual(expect.arrayContaining([kidBefore, out.kid]));
    expect((await liveJwks()).keys.map((k) => k.kid)).toEqual(liveBefore);
  });

  it("signing-key rotate --json rotates the live set by default, and never publishes it in the test set", async () => {
    const liveBefore = (await liveJwks()).keys.map((k) => k.kid);
    const out = await adminCli("signing-key", "rotate", "--json");
    expect(out.environment).toBe("live");
    expect(liveBefore).toContain(out.retired_kid);
    expect((await liveJwks()).keys.map((k) => k.kid)).toEqual(expect.arrayContaining([out.kid, out.retired_kid]));
    expect((await jwks()).keys.map((k) => k.kid)).not.toContain(out.kid);
    await expect(adminCli("signing-key", "rotate", "--env", "staging")).rejects.toThrow(/--env live\|test/);
  });
});
