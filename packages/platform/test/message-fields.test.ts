// REST and rows ⇄ RPC messages by the message descriptor: names, order, timestamps, structs,
// nested messages, 64-bit integers, optional members left out, and the rules that override them.
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { VerificationSchema } from "@icv/contracts/gen/icv/verification/v1/verification_pb.ts";
import { CreateVerificationRequestSchema } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import { messageOf, plainOf, restOf } from "../src/index.ts";

const AT = new Date("2026-03-01T12:00:00.000Z");

describe("restOf", () => {
  it("answers snake_case members in the proto's order; timestamps as ISO, structs as JSON, unset optionals left out", () => {
    const v = create(VerificationSchema, {
      id: "ver_1",
      type: "email",
      channel: "email",
      status: "pending",
      identifier: "a@example.com",
      challenge: { expiresAt: timestampFromDate(AT), instruction: "Enter the code", code: "" },
      createdAt: timestampFromDate(AT),
      clientMetadata: { plan: "pro" },
      externalUserId: "",
      attempts: 1,
      maxAttempts: 5,
      testMode: true,
      proofFormat: "jwt",
    });
    const rest = restOf(VerificationSchema, v, { method: (m: typeof v) => m.method || undefined });
    expect(JSON.stringify(rest)).toBe(
      JSON.stringify({
        id: "ver_1",
        type: "email",
        channel: "email",
        status: "pending",
        identifier: "a@example.com",
        challenge: { expires_at: "2026-03-01T12:00:00.000Z", instruction: "Enter the code" },
        created_at: "2026-03-01T12:00:00.000Z",
        client_metadata: { plan: "pro" },
        attempts: 1,
        max_attempts: 5,
        test_mode: true,
        proof_format: "jwt",
      }),
    );
  });

  it("lets a rule answer a member, a nested one by its path, and leave it out with undefined", () => {
    const v = create(VerificationSchema, { id: "ver_1", proof: { token: "t", identifierSalt: "" }, redactedAt: timestampFromDate(AT) });
    const rest = restOf(VerificationSchema, v, {
      identifier: (m: typeof v) => (m.redactedAt ? null : m.identifier),
      "proof.identifier_salt": (p: { identifierSalt: string }) => p.identifierSalt || undefined,
      attempts: () => undefined,
    });
    expect(rest.identifier).toBeNull();
    expect(rest.proof).toEqual({ token: "t" });
    expect("attempts" in rest).toBe(false);
    expect(rest.redacted_at).toBe("2026-03-01T12:00:00.000Z");
  });
});

describe("messageOf", () => {
  it("makes a request from a REST body: camelCase fields, nested messages, a number into a uint64; absent members stay absent", () => {
    const body = {
      type: "wallet",
      channel: "ethereum",
      identifier: "0xabc",
      chain_id: 8453,
      dns_provider: { name: "cloudflare", credentials: { api_token: "x" } },
      client_metadata: { a: 1 },
    };
    const fields = messageOf(CreateVerificationRequestSchema, body);
    expect(fields).toEqual({
      type: "wallet",
      channel: "ethereum",
      identifier: "0xabc",
      chainId: 8453n,
      dnsProvider: { $typeName: "icv.verification.v1.DnsProviderAccess", name: "cloudflare", credentials: { api_token: "x" } },
      clientMetadata: { a: 1 },
    });
    // and it is a valid init of the message
    expect(toBinary(CreateVerificationRequestSchema, create(CreateVerificationRequestSchema, fields)).length).toBeGreaterThan(0);
  });

  it("makes a message from a row: Dates into timestamps, null into unset (an implicit scalar's zero)", () => {
    const fields = messageOf(VerificationSchema, { id: "ver_1", method: null, external_user_id: null, created_at: AT, verified_at: null, unknown_column: 1 });
    expect(fields).toEqual({ id: "ver_1", method: "", externalUserId: undefined, createdAt: timestampFromDate(AT), verifiedAt: undefined });
  });
});

describe("plainOf", () => {
  it("gives a message's fields as plain values, nested messages without their type name and 64-bit integers as numbers", () => {
    const req = create(CreateVerificationRequestSchema, {
      type: "wallet",
      chainId: 8453n,
      dnsProvider: { name: "godaddy", credentials: { key: "k" } },
      scope: { tenantId: "ten_1" },
    });
    const plain = plainOf(CreateVerificationRequestSchema, req, ["scope"]);
    expect(plain.chainId).toBe(8453);
    expect(plain.dnsProvider).toEqual({ name: "godaddy", credentials: { key: "k" } });
    expect("scope" in plain).toBe(false);
    expect(plain.externalUserId).toBeUndefined();
  });
});
