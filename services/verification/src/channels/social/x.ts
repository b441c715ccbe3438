/** An X account: a handle, confirmed by signing in with X. */
import { oauthChannel } from "../shared/oauth-channel.ts";
import { maskAccount } from "../shared/mask.ts";
import { normalizeHandle } from "./handle.ts";

export const x = oauthChannel({ type: "social", channel: "x", name: "X", normalize: normalizeHandle, mask: maskAccount });
