/** A Instagram account: a handle, confirmed by signing in with Instagram. */
import { oauthChannel } from "../shared/oauth-channel.ts";
import { maskAccount } from "../shared/mask.ts";
import { normalizeHandle } from "./handle.ts";

export const instagram = oauthChannel({ type: "social", channel: "instagram", name: "Instagram", normalize: normalizeHandle, mask: maskAccount });
