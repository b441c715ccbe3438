import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { ASSET_CHANNELS, ASSET_TYPES, CHANNELS_BY_TYPE, iso, PHONE_DELIVERIES, VERIFICATION_STATUSES } from "@icv/platform";
import { z } from "zod";

/**
 * The REST shapes every resource shares (errors, pagination, timestamps). Each route file in
 * routes/ holds its own request and response schemas beside its handlers; together they
 * generate /api/openapi.json.
 */

/**
 * The closed vocabularies of the REST shapes. The type/channel table, the verification statuses and
 * the phone deliveries are @icv/platform's (the proto enums of vocabulary.proto; the verification
 * service's channel registry is made from the table); the rest are the REST API's own.
 */
export { ASSET_TYPES, VERIFICATION_STATUSES };

/** The type/channel table in words, for the descriptions of channel fields. */
const TABLE = Object.entries(CHANNELS_BY_TYPE)
  .map(([type, channels]) => `${type}: ${channels.join(", ")}`)
  .join("; ");

/** The table itself beside every channel field (x-channels-by-type): the channels a type takes, keyed by the type. */
const byType = { "x-channels-by-type": CHANNELS_BY_TYPE };

/** An asset type, as answers carry it and requests name it. */
export const assetType = z.enum(ASSET_TYPES).describe("The asset type; its channels are the table in x-channels-by-type of the channel field");

/** A channel of the type/channel table, as answers carry it (one of its type's channels). */
export const assetChannel = z.enum(ASSET_CHANNELS).describe(`The channel, one of its type's (${TABLE})`).meta(byType);

/**
 * A channel a request names: documented as the table's channels; the verification service checks it
 * against the type (invalid_channel_for_type names the type's channels), so it stays a string here.
 */
export const channelInput = (max: number, description = "", min = 1) =>
  (min > 0 ? z.string().min(min) : z.string())
    .max(max)
    .meta({ enum: [...ASSET_CHANNELS], description: `${description}${description ? ". " : ""}One of its type's channels: ${TABLE}`, ...byType });

/** Which way a phone verification's code travels. */
export const PhoneDelivery = z.enum(PHONE_DELIVERIES);
export const REQUEST_STATUSES = ["pending", "partial", "completed", "expired", "cancelled"] as const;
export const REQUEST_ASSET_STATUSES = ["pending", "in_progress", "verified", "failed", "expired"] as const;

export const timestamp = z.string().describe("ISO 8601 UTC timestamp with milliseconds");

export const ErrorBody = z
  .object({
    error: z.object({
      code: z.string(),
      message: z.string(),
      details: z.array(z.object({ field: z.string(), message: z.string(), code: z.string() })).optional(),
      retry_after: z.number().int().optional().describe("429 and 503: seconds until a retry may succeed (the Retry-After header too)"),
      retryAfter: z.number().int().optional().describe("The same as retry_after, for the reference SDKs"),
      request_id: z.string(),
    }),
  })
  .meta({ id: "Error" });

export const Pagination = z
  .object({
    page: z.number().int(),
    limit: z.number().int(),
    total: z.number().int(),
    pages: z.number().int(),
    hasMore: z.boolean().describe("the spec's name; has_more is the same value"),
    has_more: z.boolean(),
  })
  .meta({ id: "Pagination" });

/** The REST pagination block of an RPC's page info: the spec's camelCase hasMore and, beside it, has_more. */
export const toPagination = (p: { page: number; limit: number; total: number; pages: number; hasMore: boolean }) => ({
  page: p.page,
  limit: p.limit,
  total: p.total,
  pages: p.pages,
  hasMore: p.hasMore,
  has_more: p.hasMore,
});

const intParam = (name: string, min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, `${name} must be a whole number`)
    .transform(Number)
    .pipe(z.number().int().min(min, `${name} must be at least ${min}`).max(max, `${name} must be at most ${max}`))
    // documented as what it is: a whole number in its range (the query string carries it as text)
    .meta({ type: "integer", minimum: min, maximum: max, pattern: undefined });

export const PageQuery = {
  page: intParam("page", 1, 1_000_000).optional(),
  limit: intParam("limit", 1, 100).optional(),
};

export const jsonObject = z.record(z.string(), z.unknown());

/** The proof formats (DECISIONS.md, SD-JWT VC): the RS256 JWT always; sd-jwt-vc adds the SD-JWT VC. */
export const ProofFormat = z
  .enum(["jwt", "sd-jwt-vc"])
  .describe(
    "jwt (default): the RS256 JWT. sd-jwt-vc: the JWT and an SD-JWT VC beside it (proof.sd_jwt_vc), which the holder presents disclosing only what it chooses",
  );

/** A holder's public key, as a create (or a request's asset) gives it; the verification service checks it. */
export const HolderKey = jsonObject
  .describe(
    "The holder's public JWK: EC P-256, Ed25519 (OKP) or RSA of at least 2048 bits, without any private member (else validation_error). " +
      "The proof then carries cnf.jwk, and validate accepts it only in an SD-JWT VC presentation with a key-binding JWT signed by this key",
  )
  .meta({ id: "HolderKey" });

/** A verification's proof as answers carry it. */
export const ProofRefBody = z
  .object({
    token: z.string().describe("The RS256 JWT"),
    expires_at: timestamp,
    identifier_salt: z
      .string()
      .optional()
      .describe(
        "Hex, 16 random bytes: the JWT's identifier_hash is hex SHA-256(salt bytes ‖ UTF-8 normalized identifier). Kept beside the token, never in it; absent on proofs issued before hashes were salted",
      ),
    sd_jwt_vc: z.string().optional().describe("proof_format sd-jwt-vc: the SD-JWT VC (issuer-signed JWT and every disclosure, ~-joined, no key-binding JWT)"),
  })
  .meta({ id: "ProofRef" });

/** The proof of a verification message as its REST body. */
export const proofBody = (p: { token: string; expiresAt?: Timestamp; identifierSalt: string; sdJwtVc?: string }) => ({
  token: p.token,
  expires_at: iso(p.expiresAt) as string,
  ...(p.identifierSalt ? { identifier_salt: p.identifierSalt } : {}),
  ...(p.sdJwtVc ? { sd_jwt_vc: p.sdJwtVc } : {}),
});

/** The project a verification, request or session uses, as the answers show it (left out when none was given). */
export const projectIdShown = z
  .string()
  .optional()
  .describe("The project given at create (a verification made by a request or a session: theirs); absent: the tenant environment's default project");
