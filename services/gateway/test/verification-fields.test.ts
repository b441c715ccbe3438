// The proto is the REST ⇄ RPC mapping table of a verification (platform message-fields.ts): every
// member of the REST create body and of the REST verification is a field of the message by the same
// (snake_case) name, so the conversion by descriptor leaves nothing behind, in the proto's order.
import { describe, expect, it } from "vitest";
import { VerificationSchema } from "@icv/contracts/gen/icv/verification/v1/verification_pb.ts";
import { CreateVerificationRequestSchema } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import { CreateVerificationBody } from "../src/routes/verifications.ts";
import { Verification } from "../src/verification-schemas.ts";

const names = (schema: { fields: { name: string }[] }) => schema.fields.map((f) => f.name);

describe("the verification's REST shapes are its messages' fields", () => {
  it("every member of the create body is a field of CreateVerificationRequest", () => {
    const fields = names(CreateVerificationRequestSchema);
    expect(Object.keys(CreateVerificationBody.shape).filter((k) => !fields.includes(k))).toEqual([]);
  });

  it("the REST verification's members are the Verification message's fields, in its order", () => {
    expect(Object.keys(Verification.shape)).toEqual(names(VerificationSchema));
  });
});
