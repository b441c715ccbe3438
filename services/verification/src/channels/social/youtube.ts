/** A YouTube account: a handle, confirmed by signing in with YouTube. */
import { oauthChannel } from "../shared/oauth-channel.ts";
import { maskAccount } from "../shared/mask.ts";
import { normalizeHandle } from "./handle.ts";

export const youtube = oauthChannel({ type: "social", channel: "youtube", name: "YouTube", normalize: normalizeHandle, mask: maskAccount });
