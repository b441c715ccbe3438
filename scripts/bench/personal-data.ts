// Issue 35's bench case (docs/privacy.md, docs/performance.md): what sealing personal data costs.
// A proof (create + test-verify) writes one sealed verification row (4 values sealed, 1 blind index)
// and reads it back opened a few times; the verified-users listing opens one identifier per listed
// verification. The sealing work is timed in this process on the same values (AES-256-GCM and
// HMAC-SHA256 of node:crypto, as the service runs them) and set against the measured CPU of a
// proof and latency of a listing page on the running stack. Target: at most 5 % of a proof's CPU.
import { PersonalData } from "@icv/platform";
import { sealVerification } from "../../services/verification/src/store/sealing.ts";
import type { BenchCase, BenchContext } from "./case.ts";
import { load, loadCreateAndVerify } from "./load.ts";
import { perSec, pct, type Row } from "./report.ts";

/** Opens per proof: the created row, the pending row test-verify loads, the verified row it answers, one read. */
const OPENS_PER_PROOF = 4;
const USERS = 100;

/** µs to seal a verification row's values (sealVerification) and to open one row's four sealed values. */
function sealingCost(): { sealUs: number; openRowUs: number; openOneUs: number } {
  const pd = PersonalData.ephemeral();
  const v = {
    id: "ver_01M80FSQZ6SP5J0XCXB13KRSNC",
    type: "phone",
    identifier: "+37069199199",
    identifier_canonical: "+37069199199",
    instruction: "Open @icv_test_bot in Telegram, press Start and share your phone number (or send the code 6RQYZ2).",
    challenge_message: null,
    client_metadata: { signup: "web" },
  };
  const N = 20_000;
  let sealed = sealVerification(pd, v);
  for (let i = 0; i < 1000; i++) sealed = sealVerification(pd, v);
  let t = performance.now();
  for (let i = 0; i < N; i++) sealed = sealVerification(pd, v);
  const sealUs = ((performance.now() - t) * 1000) / N;
  t = performance.now();
  for (let i = 0; i < N; i++) {
    pd.open(sealed.identifier, `identifier:${v.id}`);
    pd.open(sealed.identifier_canonical, `identifier_canonical:${v.id}`);
    pd.open(sealed.instruction, `instruction:${v.id}`);
    pd.openJson(sealed.client_metadata, `client_metadata:${v.id}`);
  }
  const openRowUs = ((performance.now() - t) * 1000) / N;
  return { sealUs, openRowUs, openOneUs: openRowUs / 4 };
}

/** USERS verified users of the test key, one verification each. */
async function seedUsers(ctx: BenchContext): Promise<void> {
  const headers = { authorization: `Bearer ${ctx.testKey}`, "content-type": "application/json" };
  for (let i = 0; i < USERS; i++) {
    const body = JSON.stringify({ type: "email", channel: "email", identifier: `bench.user.${i}@example.com`, external_user_id: `bench-pd-${i}` });
    const v = (await (await fetch(`${ctx.stack.url}/api/v1/verifications`, { method: "POST", headers, body })).json()) as { id: string };
    await fetch(`${ctx.stack.url}/api/v1/verifications/${v.id}/test-verify`, { method: "POST", headers });
  }
}

export const personalDataCase: BenchCase = {
  name: "personal data",
  async run(ctx) {
    const cost = sealingCost();
    const base = { url: ctx.stack.url, connections: ctx.connections, duration: ctx.duration, pipelining: 1, timeout: 10 };
    const proofs = await loadCreateAndVerify(base, ctx.testKey, ctx.warmup, "create + test-verify (sealed rows)", () => ctx.stack.mainPid());
    const perProofUs = cost.sealUs + OPENS_PER_PROOF * cost.openRowUs;
    const proofShare = perProofUs / (proofs.cpuMsPerOp * 1000);
    await seedUsers(ctx);
    const list = await load(
      {
        label: `GET /api/v1/verifications/users?limit=${USERS}`,
        url: `${ctx.stack.url}/api/v1/verifications/users?limit=${USERS}`,
        headers: { authorization: `Bearer ${ctx.testKey}` },
        connections: Math.min(ctx.connections, 10),
        duration: ctx.duration,
        pipelining: 1,
        timeout: 10,
        target: () => ctx.stack.mainPid(),
      },
      ctx.warmup,
    );
    // a page opens one identifier per listed verification (at least USERS of them)
    const listShare = (USERS * cost.openOneUs) / (list.cpuMsPerOp * 1000);
    const rows: Row[] = [
      {
        name: `sealing per proof: seal ${cost.sealUs.toFixed(1)} µs + ${OPENS_PER_PROOF} opens × ${cost.openRowUs.toFixed(1)} µs`,
        rate: perSec(proofs.rate, "proofs/s"),
        p50: proofs.p50,
        p99: proofs.p99,
        ratio: `${pct(proofShare)} of a proof's CPU`,
        target: "≤ 5 % of a proof's CPU",
        pass: proofShare <= 0.05,
        errors: proofs.non2xx + proofs.errors,
        cpuMsPerOp: proofs.cpuMsPerOp,
      },
      {
        name: `verified users page of ${USERS}: ${USERS} opens × ${cost.openOneUs.toFixed(1)} µs`,
        rate: perSec(list.rate),
        p50: list.p50,
        p99: list.p99,
        ratio: `${pct(listShare)} of a page's CPU`,
        target: "(info)",
        errors: list.non2xx + list.errors,
        cpuMsPerOp: list.cpuMsPerOp,
      },
    ];
    return {
      rows,
      figures: {
        seal_row_us: cost.sealUs,
        open_row_us: cost.openRowUs,
        sealing_share_of_proof_cpu: proofShare,
        sealed_proofs_per_s: proofs.rate,
        verified_users_pages_per_s: list.rate,
        sealing_share_of_users_page_cpu: listShare,
      },
    };
  },
};
