// The raw single-process RS256 rate: node:crypto sign (RSASSA-PKCS1-v1_5 over SHA-256) of a
// JWT-sized signing input with a parsed private key, in a tight synchronous loop on one thread.
import { generateKeyPairSync, sign } from "node:crypto";
import { cpuWindow, type CpuWindow } from "./cpu.ts";

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");

/** A signing input shaped like a proof: protected header + claims, base64url, joined by a dot. */
export function jwtSigningInput(): Buffer {
  const now = Math.floor(Date.now() / 1000);
  const header = { alg: "RS256", typ: "JWT", kid: "key_01JBENCHBENCHBENCHBENCHBE" };
  const claims = {
    proof_schema_version: "1.0",
    tenant_id: "ten_01JBENCHBENCHBENCHBENCHBEN",
    env: "test",
    type: "phone",
    channel: "telegram",
    identifier_hash: "9f2c".repeat(16),
    verified_at: new Date().toISOString(),
    iss: "http://localhost:3000",
    sub: "ver_01JBENCHBENCHBENCHBENCHBEN",
    jti: "ver_01JBENCHBENCHBENCHBENCHBEN",
    iat: now,
    exp: now + 86_400,
  };
  return Buffer.from(`${b64(header)}.${b64(claims)}`);
}

export interface SignRate {
  bits: number;
  perSecond: number;
  count: number;
  inputBytes: number;
  cpu: CpuWindow;
}

/** Signs for `seconds` (after a short warm-up) and returns signatures per second. */
export function measureSignRate(bits: number, seconds: number): SignRate {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: bits });
  const input = jwtSigningInput();
  const warmEnd = performance.now() + 300;
  while (performance.now() < warmEnd) sign("sha256", input, privateKey);
  let n = 0;
  const window = cpuWindow(() => process.pid);
  const start = performance.now();
  const end = start + seconds * 1000;
  let now = start;
  while (now < end) {
    for (let i = 0; i < 20; i++) sign("sha256", input, privateKey);
    n += 20;
    now = performance.now();
  }
  return { bits, perSecond: (n * 1000) / (now - start), count: n, inputBytes: input.length, cpu: window() };
}
