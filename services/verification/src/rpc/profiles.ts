import type { ConnectRouter } from "@connectrpc/connect";
import { ProfileService, type ProfileInput } from "@icv/contracts/gen/icv/verification/v1/profile_service_pb.ts";
import { pageInfo, pageRequest, requireScope } from "@icv/platform";
import type { ProfileChange, Profiles } from "../profiles/profiles.ts";
import { toProfileMessage, toPublicProfileMessage } from "./convert.ts";

const change = (p: ProfileInput | undefined): ProfileChange => ({
  displayName: p?.displayName,
  bio: p?.bio,
  avatarUrl: p?.avatarUrl,
  isPublic: p?.isPublic,
  setProofs: p?.setProofs ?? false,
  proofs: p?.proofs ?? [],
  clearBio: p?.clearBio ?? false,
  clearAvatarUrl: p?.clearAvatarUrl ?? false,
});

/** ProfileService: thin handlers over Profiles. */
export function profileRoutes(profiles: Profiles) {
  return (router: ConnectRouter) =>
    router.service(ProfileService, {
      async listProfiles(req) {
        const { page, limit, offset } = pageRequest(req.page);
        const { rows, total } = await profiles.list(requireScope(req.scope), limit, offset);
        return { profiles: rows.map(toProfileMessage), pageInfo: pageInfo(page, limit, total) };
      },
      async createProfile(req) {
        return { profile: toProfileMessage(await profiles.create(requireScope(req.scope), change(req.profile))) };
      },
      async getProfile(req) {
        return { profile: toProfileMessage(await profiles.get(requireScope(req.scope), req.id)) };
      },
      async updateProfile(req) {
        return { profile: toProfileMessage(await profiles.update(requireScope(req.scope), req.id, change(req.profile))) };
      },
      async deleteProfile(req) {
        await profiles.delete(requireScope(req.scope), req.id);
        return {};
      },
      async getPublicProfile(req) {
        return toPublicProfileMessage(await profiles.publicView(req.id));
      },
    });
}
