/** A TikTok account: a handle, confirmed by signing in with TikTok. */
import { oauthChannel } from "../shared/oauth-channel.ts";
import { maskAccount } from "../shared/mask.ts";
import { normalizeHandle } from "./handle.ts";

export const tiktok = oauthChannel({ type: "social", channel: "tiktok", name: "TikTok", normalize: normalizeHandle, mask: maskAccount });
