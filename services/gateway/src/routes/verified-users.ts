import { z } from "zod";
import type {
  VerifiedUser as VerifiedUserMsg,
  VerifiedUserVerification as VerificationMsg,
} from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import { iso } from "@icv/platform";
import { scopeOf, type Clients } from "../clients.ts";
import { route, type RouteDef } from "../registry.ts";
import { assetChannel, assetType, ErrorBody, PageQuery, Pagination, timestamp, toPagination } from "../schemas.ts";

const VERIFIED_USERS_NOTE =
  "Which verifications count: those carrying this external_user_id whose status is verified (pending, failed, expired and revoked ones do not). " +
  "The detail view also lists the user's revoked verifications, with their status. Identifiers are masked.";

const VerifiedUserVerification = z
  .object({
    id: z.string(),
    type: assetType,
    channel: assetChannel,
    identifier: z.string().describe("Masked: +3706***9199, j***e@example.com, 0x12***abcd"),
    verified_at: timestamp,
  })
  .meta({ id: "VerifiedUserVerification" });

const VerifiedUserVerificationDetail = VerifiedUserVerification.extend({
  status: z.enum(["verified", "revoked"]),
  has_proof: z.boolean().describe("Verified, not revoked, and the proof has not expired"),
  proof_expires_at: timestamp.nullable(),
  created_at: timestamp,
}).meta({ id: "VerifiedUserVerificationDetail" });

const verifiedUserFields = {
  external_user_id: z.string(),
  verification_count: z.number().int().describe("Verified verifications (revoked ones not counted)"),
  types_verified: z.array(assetType).describe("Distinct types of the verified verifications, sorted"),
  first_verified_at: timestamp,
  last_verified_at: timestamp,
};

const VerifiedUser = z
  .object({ ...verifiedUserFields, verifications: z.array(VerifiedUserVerification).describe("The verified ones, newest first") })
  .describe(VERIFIED_USERS_NOTE)
  .meta({ id: "VerifiedUser" });

const VerifiedUserDetail = z
  .object({
    ...verifiedUserFields,
    verifications: z.array(VerifiedUserVerificationDetail).describe("The verified and the revoked ones, newest verified_at first"),
  })
  .describe(VERIFIED_USERS_NOTE)
  .meta({ id: "VerifiedUserDetail" });

const VerifiedUserList = z.object({ data: z.array(VerifiedUser), pagination: Pagination }).meta({ id: "VerifiedUserList" });

const VerifiedUsersQuery = z.object({ ...PageQuery }).strict();

const ExternalUserParams = z.object({ externalUserId: z.string().min(1).max(255) });

const err = (description: string) => ({ description, schema: ErrorBody });

const WHICH =
  "Users are the external_user_id values of the key's tenant and environment with at least one verified verification. " +
  "verification_count, types_verified and first/last_verified_at cover verified verifications only; revoked ones are left out " +
  "of the list and shown, with their status, in the detail view. Identifiers are masked.";

const listItem = (v: VerificationMsg) => ({
  id: v.id,
  type: v.type,
  channel: v.channel,
  identifier: v.identifier,
  verified_at: iso(v.verifiedAt),
});

const detailItem = (v: VerificationMsg) => ({
  ...listItem(v),
  status: v.status,
  has_proof: v.hasProof,
  proof_expires_at: iso(v.proofExpiresAt) ?? null,
  created_at: iso(v.createdAt),
});

function toUser<T>(u: VerifiedUserMsg, item: (v: VerificationMsg) => T) {
  return {
    external_user_id: u.externalUserId,
    verification_count: u.verificationCount,
    types_verified: u.typesVerified,
    verifications: u.verifications.map(item),
    first_verified_at: iso(u.firstVerifiedAt),
    last_verified_at: iso(u.lastVerifiedAt),
  };
}

export function verifiedUserRoutes(c: Clients): RouteDef[] {
  return [
    route({
      method: "get",
      path: "/api/v1/verifications/users",
      tag: "Verified users",
      summary: "Verified users grouped by external_user_id, newest last_verified_at first",
      description: WHICH,
      auth: "key",
      query: VerifiedUsersQuery,
      responses: { 200: { description: "A page of verified users", schema: VerifiedUserList }, 400: err("validation_error") },
      async handler({ req, query }) {
        const r = await c.verification.listVerifiedUsers({
          scope: scopeOf(req),
          page: { page: query.page ?? 1, limit: query.limit ?? 20 },
        });
        return { body: { data: r.users.map((u) => toUser(u, listItem)), pagination: toPagination(r.pageInfo!) } };
      },
    }),
    route({
      method: "get",
      path: "/api/v1/verifications/users/{externalUserId}",
      tag: "Verified users",
      summary: "One verified user, with status, has_proof and proof expiry of each verification",
      description: WHICH,
      auth: "key",
      params: ExternalUserParams,
      responses: {
        200: { description: "The verified user", schema: VerifiedUserDetail },
        404: err("not_found: no verified verification carries this external_user_id in this tenant and environment"),
      },
      async handler({ req, params }) {
        const r = await c.verification.getVerifiedUser({ scope: scopeOf(req), externalUserId: params.externalUserId });
        return { body: toUser(r.user!, detailItem) };
      },
    }),
  ];
}
