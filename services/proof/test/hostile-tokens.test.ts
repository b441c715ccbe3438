// Tokens made by an attacker, through the real proof service and its database (issue 28, items
// 1 and 4): what hides inside base64 never reaches SQL, and a token has one encoding only.
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { newId, systemClock } from "@icv/platform";
import { startTestProofService, type TestProofService } from "./support/proof-service.ts";

let svc: TestProofService;
beforeAll(async () => {
  svc = await startTestProofService(systemClock);
});
afterAll(() => svc?.close());

const scope = { tenantId: "ten_A", environment: Environment.TEST };
const b64 = (s: string) => Buffer.from(s).toString("base64url");
const validate = (proofToken: string) => svc.client.validateProof({ proofToken, scope });

async function goodToken(): Promise<string> {
  const r = await svc.client.issueProof({
    scope,
    proofId: newId("verification", Date.now()),
    type: "email",
    channel: "email",
    identifier: "john.doe@example.com",
    verifiedAt: timestampFromDate(new Date()),
    expiresInSeconds: 3600,
    method: "otp",
  });
  return r.token;
}

describe("a header that hides what the body checks would refuse", () => {
  const kids: [string, unknown][] = [
    ["a NUL", "a\u0000"],
    ["a lone surrogate", "a\ud800"],
    ["a huge string", "k".repeat(5000)],
    ["a number", 12],
    ["an object", { $ne: null }],
    ["path traversal", "../../etc/passwd"],
  ];
  it.each(kids)("answers a reason, not an error, for a kid with %s", async (_name, kid) => {
    const token = `${b64(JSON.stringify({ alg: "RS256", kid }))}.${b64("{}")}.${b64("sig")}`;
    expect(await validate(token)).toMatchObject({ valid: false, reason: expect.stringMatching(/^(unknown_key|malformed)$/) });
  });

  it("answers a reason for a good kid whose payload holds a NUL and a lone surrogate", async () => {
    const [h] = (await goodToken()).split(".");
    const token = `${h}.${b64('{"sub":"ver_\\u0000","jti":"\\ud800"}')}.${b64("sig")}`;
    expect(await validate(token)).toMatchObject({ valid: false, reason: "invalid_signature" });
  });
});

describe("one encoding per token", () => {
  it("still validates the token as issued", async () => {
    expect(await validate(await goodToken())).toMatchObject({ valid: true });
  });

  it("refuses padding appended to the signature", async () => {
    const token = await goodToken();
    expect(await validate(`${token}==`)).toMatchObject({ valid: false, reason: "malformed" });
    expect(await validate(`${token}=`)).toMatchObject({ valid: false, reason: "malformed" });
  });

  it("refuses padding or standard base64 characters in the header or payload", async () => {
    const [h, p, s] = (await goodToken()).split(".");
    expect(await validate(`${h}=.${p}.${s}`)).toMatchObject({ valid: false, reason: "malformed" });
    expect(await validate(`${h}.${p}==.${s}`)).toMatchObject({ valid: false, reason: "malformed" });
    const std = Buffer.from(s, "base64url").toString("base64").replace(/=+$/, "");
    if (std !== s) expect(await validate(`${h}.${p}.${std}`)).toMatchObject({ valid: false, reason: "malformed" });
    expect(await validate(`${h}.${p}.${s.slice(0, 10)} ${s.slice(10)}`)).toMatchObject({ valid: false, reason: "malformed" });
  });

  it("refuses a last character whose unused bits are not zero (it decodes to the same bytes)", async () => {
    const [h, p, s] = (await goodToken()).split(".");
    // a 256-byte signature: 342 characters, the last one carries 2 unused bits
    expect(s.length % 4).toBe(2);
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const last = alphabet.indexOf(s.at(-1) as string);
    const twin = `${s.slice(0, -1)}${alphabet[last | 1]}`;
    expect(Buffer.from(twin, "base64url").equals(Buffer.from(s, "base64url"))).toBe(true);
    expect(await validate(`${h}.${p}.${twin}`)).toMatchObject({ valid: false, reason: "malformed" });
  });
});
