// One unary RPC between two processes over mutual TLS, as process-per-service deployments make
// it: the gRPC protocol (what rpcClient uses) against the Connect protocol with binary protobuf,
// both on one reused HTTP/2 session to a service host (startServiceHost, which serves both).
// Reports calls/s and CPU per call of the caller and of the callee, rounds alternating.
//
//   node --import tsx scripts/bench/rpc-transport.ts [--seconds=5] [--rounds=3] [--concurrency=20]
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { Health } from "@icv/contracts/gen/grpc/health/v1/health_pb.ts";
import { createLogger, ensureTlsDir, startServiceHost, TlsIdentity, tlsDirFiles } from "@icv/platform";

const logger = createLogger({ level: "warn" });

if (process.argv[2] === "serve") {
  // the callee: a service host with only the health service (open to every authenticated caller)
  const dir = process.argv[3];
  const identity = await TlsIdentity.load("proof", tlsDirFiles(dir, "proof"), logger);
  const host = await startServiceHost({
    name: "icv.proof.v1.ProofService",
    host: "127.0.0.1",
    port: 0,
    logger,
    routes: () => {},
    identity,
    callers: [],
  });
  process.stdout.write(`${JSON.stringify({ port: host.port })}\n`);
  process.on("SIGTERM", () => void host.close().then(() => process.exit(0)));
} else {
  const arg = (name: string, dflt: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? dflt);
  const seconds = arg("seconds", 5);
  const rounds = arg("rounds", 3);
  const concurrency = arg("concurrency", 20);
  const dir = mkdtempSync(path.join(tmpdir(), "icv-rpc-bench-"));
  await ensureTlsDir(dir, logger);
  const server = spawn(process.execPath, ["--import", "tsx", import.meta.filename, "serve", dir], { stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise<number>((resolve, reject) => {
    server.stdout!.once("data", (b: Buffer) => resolve((JSON.parse(b.toString()) as { port: number }).port));
    server.once("exit", () => reject(new Error("the callee exited")));
  });
  const identity = await TlsIdentity.load("verification", tlsDirFiles(dir, "verification"), logger);
  const baseUrl = `https://127.0.0.1:${port}`;
  // the options rpcClient gives its transport, for both protocols
  const nodeOptions = {
    servername: "proof",
    get secureContext() {
      return identity.secureContext;
    },
  };
  const transports: Record<string, Transport> = {
    grpc: createGrpcTransport({ baseUrl, pingIntervalMs: 30_000, acceptCompression: [], nodeOptions }),
    "connect (binary)": createConnectTransport({
      baseUrl,
      httpVersion: "2",
      useBinaryFormat: true,
      pingIntervalMs: 30_000,
      acceptCompression: [],
      nodeOptions,
    }),
  };
  const ticks = (pid: number) => {
    const f = readFileSync(`/proc/${pid}/stat`, "utf8")
      .slice(readFileSync(`/proc/${pid}/stat`, "utf8").lastIndexOf(")") + 2)
      .split(" ");
    return (Number(f[11]) + Number(f[12])) * 10; // ms (USER_HZ 100)
  };
  const results: Record<string, { calls: number; ms: number; callerMs: number; calleeMs: number }> = {};
  for (let r = 0; r < rounds; r++) {
    for (const [name, transport] of Object.entries(transports)) {
      const client = createClient(Health, transport);
      for (let i = 0; i < 200; i++) await client.check({ service: "" }); // warm: session, JIT
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      const s0 = ticks(server.pid!);
      let calls = 0;
      const end = t0 + seconds * 1000;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (performance.now() < end) {
            await client.check({ service: "" });
            calls++;
          }
        }),
      );
      const c = process.cpuUsage(c0);
      const x = (results[name] ??= { calls: 0, ms: 0, callerMs: 0, calleeMs: 0 });
      x.calls += calls;
      x.ms += performance.now() - t0;
      x.callerMs += (c.user + c.system) / 1000;
      x.calleeMs += ticks(server.pid!) - s0;
    }
  }
  process.stdout.write(`one unary RPC (grpc.health.v1 Check) over mutual TLS, one HTTP/2 session, ${concurrency} at once, ${rounds} × ${seconds} s each\n`);
  for (const [name, x] of Object.entries(results)) {
    const us = (ms: number) => ((ms * 1000) / x.calls).toFixed(0).padStart(4);
    process.stdout.write(
      `  ${name.padEnd(17)} ${((x.calls * 1000) / x.ms).toFixed(0).padStart(6)} calls/s   caller ${us(x.callerMs)} µs CPU/call   callee ${us(x.calleeMs)} µs CPU/call\n`,
    );
  }
  server.kill("SIGTERM");
  identity.close();
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}
