// The code a test-mode verification would have sent (email, domain by email, outbound phone), read
// where a tenant reads it: GET /api/v1/test/messages (newest first). Test keys send nothing.
import { expect } from "vitest";

type Client = { get(p: string): Promise<{ status: number; body: any; text: string }> };

export async function sentCode(client: Client, verificationId: string): Promise<string> {
  const r = await client.get(`/api/v1/test/messages?verification_id=${verificationId}`);
  expect(r.status, r.text).toBe(200);
  const m = (r.body.data as { direction: string; text: string }[]).find((x) => x.direction === "outbound");
  const code = m && /verification code is:?\s*([A-Z0-9]{6})\b/.exec(m.text)?.[1];
  expect(code, `an outbound code message for ${verificationId}`).toBeDefined();
  return code!;
}

/** A 6-character code from the same alphabet that is certainly not `code`. */
export const otherCode = (code: string, n = 0) => {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".replace(code[0], "");
  return alphabet[n % alphabet.length] + code.slice(1);
};
