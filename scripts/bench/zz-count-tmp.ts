import { PGlite } from "@electric-sql/pglite";
import { startStack, api } from "../../test/support/stack.ts";
const counts = new Map<string, { n: number; ms: number }>();
let on = false;
for (const m of ["query", "exec", "transaction"] as const) {
  const orig = (PGlite.prototype as any)[m];
  (PGlite.prototype as any)[m] = async function (this: unknown, ...a: unknown[]) {
    if (!on) return orig.apply(this, a);
    const t = performance.now();
    try { return await orig.apply(this, a); } finally {
      const k = `${m} ${typeof a[0] === "string" ? a[0].replace(/\s+/g, " ").slice(0, 70) : ""}`;
      const c = counts.get(k) ?? { n: 0, ms: 0 }; c.n++; c.ms += performance.now() - t; counts.set(k, c);
    }
  };
}
const s = await startStack({ RATE_LIMIT_PER_MINUTE: "1000000000" });
const t = await s.tenant("x");
const c = api(s.url, t.testKey);
const created = await c.post("/api/v1/verifications", { type: "phone", channel: "telegram", identifier: "+37069199199" });
await c.post(`/api/v1/verifications/${created.body.id}/test-verify`);
for (let i = 0; i < 100; i++) await c.get(`/api/v1/verifications/${created.body.id}`);
const N = Number(process.env.N ?? 300);
const report = (label: string, n: number, ms: number, cpu: NodeJS.CpuUsage) => {
  console.log(`\n${label}: ${(ms / n).toFixed(3)} ms wall each, process CPU ${((cpu.user + cpu.system) / 1000 / n).toFixed(3)} ms each`);
  for (const [k, v] of [...counts].sort((a, b) => b[1].ms - a[1].ms)) console.log(`  ${(v.n / n).toFixed(2)}/op ${(v.ms / v.n).toFixed(3)} ms avg  ${k}`);
  counts.clear();
};
on = true; let c0 = process.cpuUsage(); let t0 = performance.now();
for (let i = 0; i < N; i++) { const r = await c.get(`/api/v1/verifications/${created.body.id}`); if (r.status !== 200) throw new Error(String(r.status)); }
report("GET", N, performance.now() - t0, process.cpuUsage(c0));
c0 = process.cpuUsage(); t0 = performance.now();
for (let i = 0; i < N; i++) await c.post("/api/v1/proofs/validate", { proof_token: (await Promise.resolve(0), undefined) ?? "" });
counts.clear();
const tok = (await c.post(`/api/v1/verifications/${created.body.id}/test-verify`)).body.proof_token;
c0 = process.cpuUsage(); t0 = performance.now();
for (let i = 0; i < N; i++) await c.post("/api/v1/proofs/validate", { proof_token: tok, identifier: "+37069199199" });
report("validate", N, performance.now() - t0, process.cpuUsage(c0));
c0 = process.cpuUsage(); t0 = performance.now();
for (let i = 0; i < N; i++) {
  const v = await c.post("/api/v1/verifications", { type: "phone", channel: "telegram", identifier: "+37069199199" });
  await c.post(`/api/v1/verifications/${v.body.id}/test-verify`);
}
report("create+test-verify", N, performance.now() - t0, process.cpuUsage(c0));
await s.close();
