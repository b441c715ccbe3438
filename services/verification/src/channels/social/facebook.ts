/** A Facebook account: a handle, confirmed by signing in with Facebook. */
import { oauthChannel } from "../shared/oauth-channel.ts";
import { maskAccount } from "../shared/mask.ts";
import { normalizeHandle } from "./handle.ts";

export const facebook = oauthChannel({ type: "social", channel: "facebook", name: "Facebook", normalize: normalizeHandle, mask: maskAccount });
