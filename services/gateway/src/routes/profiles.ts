import { z } from "zod";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Profile as ProfileMsg, ProfileInputSchema } from "@icv/contracts/gen/icv/verification/v1/profile_service_pb.ts";
import { iso, type Config } from "@icv/platform";
import { scopeOf, type Clients } from "../clients.ts";
import { route, type RouteDef } from "../registry.ts";
import { PublicProfile, toPublicProfile } from "../profile-schemas.ts";
import { ErrorBody, PageQuery, Pagination, timestamp, toPagination } from "../schemas.ts";

/** Profiles (DECISIONS.md "Projects, message templates and profiles"): a tenant's public pages of verified assets. */
export const MAX_PROFILE_PROOFS = 50;
const MASK_LEVELS = ["full", "partial", "hidden"] as const;

const httpsUrl = z
  .string()
  .max(2048)
  .refine((v) => URL.canParse(v) && new URL(v).protocol === "https:", "must be an https URL")
  .describe("An https URL of an image (the public page loads it from that origin only)");

const ProfileProofInput = z
  .object({
    verification_id: z.string().min(1).max(64).describe("A verified verification of the key's tenant and environment"),
    label: z.string().max(100).default("").describe("Shown on the page (e.g. 'Main website'); the type is shown when empty"),
    mask_level: z
      .enum(MASK_LEVELS)
      .default("partial")
      .describe("full: the identifier as verified; partial: masked (+3706***9199, j***e@example.com); hidden: not shown"),
    display_order: z.number().int().min(0).max(10_000).optional().describe("Ascending; default the item's position"),
  })
  .strict();

const profileFields = {
  display_name: z.string().trim().min(1).max(100),
  bio: z.string().max(1_000).nullable(),
  avatar_url: httpsUrl.nullable(),
  is_public: z.boolean().describe("Only a public profile has a page; default false"),
  proofs: z.array(ProfileProofInput).max(MAX_PROFILE_PROOFS).describe(`At most ${MAX_PROFILE_PROOFS}; replaces the list on update`),
};

const CreateProfileBody = z
  .object({
    ...profileFields,
    bio: profileFields.bio.optional(),
    avatar_url: profileFields.avatar_url.optional(),
    is_public: profileFields.is_public.optional(),
    proofs: profileFields.proofs.optional(),
  })
  .strict()
  .meta({ id: "CreateProfileRequest" });

const UpdateProfileBody = z.object(profileFields).partial().strict().meta({ id: "UpdateProfileRequest" });

const Profile = z
  .object({
    id: z.string().describe("prf_ + ULID"),
    display_name: z.string(),
    bio: z.string().nullable(),
    avatar_url: z.string().nullable(),
    is_public: z.boolean(),
    proofs: z.array(z.object({ verification_id: z.string(), label: z.string(), mask_level: z.enum(MASK_LEVELS), display_order: z.number().int() })),
    public_url: z.string().describe("{PUBLIC_BASE_URL}/p/{id}: the page (404 while the profile is not public)"),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: "Profile" });

const ProfileList = z.object({ data: z.array(Profile), pagination: Pagination }).meta({ id: "ProfileList" });

const IdParams = z.object({ id: z.string().min(1).max(64) });
const ListQuery = z.object({ ...PageQuery }).strict();
const err = (description: string) => ({ description, schema: ErrorBody });

type ProofInput = z.infer<typeof ProfileProofInput>;
type Fields = Partial<{ display_name: string; bio: string | null; avatar_url: string | null; is_public: boolean; proofs: ProofInput[] }>;

/** REST body → RPC input: absent members are left alone; null clears bio and avatar_url. */
function toInput(b: Fields): MessageInitShape<typeof ProfileInputSchema> {
  return {
    displayName: b.display_name,
    bio: b.bio ?? undefined,
    avatarUrl: b.avatar_url ?? undefined,
    isPublic: b.is_public,
    setProofs: b.proofs !== undefined,
    proofs: (b.proofs ?? []).map((p, i) => ({
      verificationId: p.verification_id,
      label: p.label,
      maskLevel: p.mask_level,
      displayOrder: p.display_order ?? i,
    })),
    clearBio: b.bio === null,
    clearAvatarUrl: b.avatar_url === null,
  };
}

export const publicProfileUrl = (config: Config, id: string) => `${config.publicBaseUrl}/p/${id}`;

function toRest(config: Config, p: ProfileMsg) {
  return {
    id: p.id,
    display_name: p.displayName,
    bio: p.bio ?? null,
    avatar_url: p.avatarUrl ?? null,
    is_public: p.isPublic,
    proofs: p.proofs.map((x) => ({
      verification_id: x.verificationId,
      label: x.label,
      mask_level: x.maskLevel as (typeof MASK_LEVELS)[number],
      display_order: x.displayOrder,
    })),
    public_url: publicProfileUrl(config, p.id),
    created_at: iso(p.createdAt),
    updated_at: iso(p.updatedAt),
  };
}

const TAG = "Profiles";

export function profileRoutes(config: Config, c: Clients): RouteDef[] {
  const one = (p: ProfileMsg | undefined) => toRest(config, p!);
  return [
    route({
      method: "get",
      path: "/api/v1/me/profiles",
      tag: TAG,
      summary: "The key's tenant's profiles in its environment, newest first",
      description:
        "Public profiles: pages at /p/{id} that list verified verifications (asset type, masked identifier, date) for anyone to see, a page at a time.",
      auth: "key",
      query: ListQuery,
      responses: { 200: { description: "A page of profiles", schema: ProfileList }, 400: err("validation_error") },
      async handler({ req, query }) {
        const r = await c.profiles.listProfiles({ scope: scopeOf(req), page: { page: query.page ?? 1, limit: query.limit ?? 20 } });
        return { body: { data: r.profiles.map((p) => toRest(config, p)), pagination: toPagination(r.pageInfo!) } };
      },
    }),
    route({
      method: "post",
      path: "/api/v1/me/profiles",
      tag: TAG,
      summary: "Create a profile listing verified verifications",
      description:
        "Publishes a profile page listing up to 50 verified verifications of this tenant and environment; the page shows each asset masked, and a listed proof that is later revoked or expires drops off the page.",
      auth: "key",
      body: CreateProfileBody,
      responses: {
        201: { description: "The profile", schema: Profile },
        400: err(
          "validation_error: a bad field, over 50 proofs, or a listed verification that is not verified in this tenant and environment (the detail names the item)",
        ),
      },
      async handler({ req, body }) {
        const r = await c.profiles.createProfile({ scope: scopeOf(req), profile: toInput(body) });
        return { status: 201, body: one(r.profile) };
      },
    }),
    route({
      method: "get",
      path: "/api/v1/me/profiles/{id}",
      tag: TAG,
      summary: "One profile",
      description: "One profile of the key's tenant and environment, with the verifications it lists and its public page URL.",
      auth: "key",
      params: IdParams,
      responses: {
        200: { description: "The profile", schema: Profile },
        404: err("not_found (also another tenant's or environment's profile)"),
      },
      async handler({ req, params }) {
        return { body: one((await c.profiles.getProfile({ scope: scopeOf(req), id: params.id })).profile) };
      },
    }),
    route({
      method: "patch",
      path: "/api/v1/me/profiles/{id}",
      tag: TAG,
      summary: "Update a profile: the members given replace the stored ones (proofs as a whole list; null clears bio or avatar_url)",
      description: "Changes a profile's name, bio, avatar or listed verifications; its public page shows the change at once.",
      auth: "key",
      params: IdParams,
      body: UpdateProfileBody,
      responses: { 200: { description: "The profile", schema: Profile }, 400: err("validation_error"), 404: err("not_found") },
      async handler({ req, params, body }) {
        return { body: one((await c.profiles.updateProfile({ scope: scopeOf(req), id: params.id, profile: toInput(body) })).profile) };
      },
    }),
    route({
      method: "delete",
      path: "/api/v1/me/profiles/{id}",
      tag: TAG,
      summary: "Delete a profile (its page answers 404 from then on)",
      description: "Deletes the profile; its public page and JSON answer not_found from then on.",
      auth: "key",
      params: IdParams,
      responses: { 200: { description: "Deleted", schema: z.object({ success: z.literal(true), id: z.string() }) }, 404: err("not_found") },
      async handler({ req, params }) {
        await c.profiles.deleteProfile({ scope: scopeOf(req), id: params.id });
        return { body: { success: true, id: params.id } };
      },
    }),
    route({
      method: "get",
      path: "/p/{id}.json",
      tag: TAG,
      summary: "A public profile as JSON (no key): each listed proof's type, channel, masked identifier, verified_at and its status now",
      description: "The same data as the page at /p/{id}. Limited per client IP like the other public endpoints. 404 unless the profile exists and is public.",
      auth: "public",
      params: IdParams,
      responses: { 200: { description: "The public profile", schema: PublicProfile }, 404: err("not_found") },
      async handler({ params }) {
        const r = await c.profiles.getPublicProfile({ id: params.id });
        return { body: toPublicProfile(r), headers: { "Cache-Control": "no-store" } };
      },
    }),
  ];
}
