import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { cpuWindow } from "./cpu.ts";
import { createTenant, freshPostgres, startStack, stackEnv } from "./stack.ts";
const db = process.env.DATABASE_URL ? await freshPostgres(process.env.DATABASE_URL) : undefined;
const dataDir = mkdtempSync(path.join(tmpdir(), "benchlead-"));
const env = await stackEnv(dataDir, { DATABASE_URL: db?.url, REDIS_URL: process.env.REDIS_URL });
const stack = await startStack(env);
try {
  await sleep(3000);
  const w = cpuWindow(() => stack.mainPid());
  await sleep(10000);
  const r = w();
  console.log("idle: stack cores", r.target.toFixed(3), "cpu s", r.targetSeconds);
  const t = await createTenant(stack.adminUrl, dataDir, "x");
  const auth = { authorization: `Bearer ${t.testKey}` };
  const c = await (await fetch(stack.url + "/api/v1/verifications", { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ type: "phone", channel: "telegram", identifier: "+37069199199" }) })).json() as any;
  await fetch(`${stack.url}/api/v1/verifications/${c.id}/test-verify`, { method: "POST", headers: auth }).then((r) => r.text());
  for (const n of [200, 1000, 1000]) {
    const w2 = cpuWindow(() => stack.mainPid());
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await fetch(`${stack.url}/api/v1/verifications/${c.id}`, { headers: auth }).then((r) => r.text());
    const el = performance.now() - t0;
    const r2 = w2();
    console.log(`sequential GET x${n}: ${(el / n).toFixed(3)} ms each wall, stack CPU ${((r2.targetSeconds * 1000) / n).toFixed(3)} ms each; other cores ${r2.others.toFixed(2)}`);
  }
} finally {
  await stack.stop();
  await db?.drop();
}
