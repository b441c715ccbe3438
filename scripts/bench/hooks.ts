// Inbound provider hook → verified: WhatsApp Cloud API webhooks (signed as Meta signs them) carrying
// the codes of live phone verifications, sent to the running stack. A hook is answered once its
// message is settled: the verification is verified, its proof signed and its events written.
// Replies go to a local stand-in of the Graph API's messages endpoint, which counts them.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { whatsappSignature } from "../../packages/platform/src/messaging/index.ts";
import { cpuWindow, type CpuWindow } from "./cpu.ts";

export const BENCH_WHATSAPP = {
  phoneNumberId: "1098765432",
  accessToken: "EAAG-bench-access-token-0123",
  appSecret: "bench-whatsapp-app-secret-0123",
  number: "+15550001234",
};

export interface HookResult {
  count: number;
  /** hooks per second, from the first hook sent to the last answered */
  rate: number;
  p50: number;
  p99: number;
  /** hooks answered 200 */
  ok: number;
  /** verifications verified afterwards (GET list, status=verified) */
  verified: number;
  /** replies the stand-in Graph API received */
  replies: number;
  /** where the CPU went while the hooks were sent (not their creates) */
  cpu: CpuWindow;
  /** CPU ms of the process under test per hook */
  cpuMsPerHook: number;
}

/** A stand-in for POST /{version}/{phone-number-id}/messages that answers like the Graph API and counts. */
export async function startGraphStandIn(): Promise<{ url: string; replies: () => number; close(): Promise<void> }> {
  let replies = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      replies++;
      res.writeHead(200, { "content-type": "application/json" }).end('{"messaging_product":"whatsapp","messages":[{"id":"wamid.bench"}]}');
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v21.0`,
    replies: () => replies,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

/** Runs `work(i)` for i in [0, count) with at most `concurrency` at once. */
async function pool(count: number, concurrency: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) await work(next++);
    }),
  );
}

/**
 * Creates `count` live WhatsApp phone verifications (numbers from `first` on, so runs do not
 * collide), then delivers one signed hook per code, `concurrency` at once, and times each.
 */
export async function benchHooks(
  base: string,
  liveKey: string,
  count: number,
  concurrency: number,
  replies: () => number,
  first: number,
  target?: () => number | undefined,
): Promise<HookResult> {
  const auth = { authorization: `Bearer ${liveKey}` };
  const codes: { phone: string; code: string }[] = new Array(count);
  await pool(count, concurrency, async (i) => {
    const phone = `+3706${String(1_000_000 + first + i).padStart(7, "0")}`;
    const r = await fetch(`${base}/api/v1/verifications`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ type: "phone", channel: "whatsapp", identifier: phone }),
    });
    const body = (await r.json()) as { challenge?: { code?: string } };
    if (r.status !== 201 || !body.challenge?.code) throw new Error(`create failed: ${r.status} ${JSON.stringify(body)}`);
    codes[i] = { phone, code: body.challenge.code };
  });

  const before = replies();
  const latencies: number[] = [];
  let ok = 0;
  const began = performance.now();
  const cpuDone = cpuWindow(target);
  await pool(count, concurrency, async (i) => {
    const { phone, code } = codes[i];
    const waId = phone.slice(1);
    const payload = JSON.stringify({
      object: "whatsapp_business_account",
      entry: [
        {
          id: "102290129340398",
          changes: [
            {
              field: "messages",
              value: {
                messaging_product: "whatsapp",
                metadata: { display_phone_number: BENCH_WHATSAPP.number.slice(1), phone_number_id: BENCH_WHATSAPP.phoneNumberId },
                contacts: [{ profile: { name: "Bench" }, wa_id: waId }],
                messages: [
                  {
                    from: waId,
                    id: `wamid.bench.${first + i}`,
                    timestamp: String(Math.floor(Date.now() / 1000)),
                    type: "text",
                    text: { body: code },
                  },
                ],
              },
            },
          ],
        },
      ],
    });
    const t0 = performance.now();
    const r = await fetch(`${base}/hooks/whatsapp`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-hub-signature-256": whatsappSignature(BENCH_WHATSAPP.appSecret, payload) },
      body: payload,
    });
    await r.arrayBuffer();
    latencies.push(performance.now() - t0);
    if (r.status === 200) ok++;
  });
  const seconds = (performance.now() - began) / 1000;
  const cpu = cpuDone();

  // every verification of this run, read back (status verified, a proof)
  let verified = 0;
  const ids = new Set(codes.map((c) => c.phone));
  for (let page = 1; ; page++) {
    const list = await fetch(`${base}/api/v1/verifications?channel=whatsapp&status=verified&limit=100&page=${page}`, { headers: auth });
    const body = (await list.json()) as { data: { identifier: string; proof?: { token: string } }[]; pagination: { hasMore: boolean } };
    verified += body.data.filter((v) => ids.has(v.identifier) && v.proof?.token).length;
    if (!body.pagination.hasMore) break;
  }
  // replies are sent after the answer: give the last ones a moment
  for (let i = 0; i < 50 && replies() - before < ok; i++) await new Promise((r) => setTimeout(r, 20));
  latencies.sort((a, b) => a - b);
  return {
    count,
    rate: count / seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    ok,
    verified,
    replies: replies() - before,
    cpu,
    cpuMsPerHook: (cpu.targetSeconds * 1000) / count,
  };
}
