/** A GitHub account: a handle, confirmed by signing in with GitHub. */
import { oauthChannel } from "../shared/oauth-channel.ts";
import { maskAccount } from "../shared/mask.ts";
import { normalizeHandle } from "./handle.ts";

export const github = oauthChannel({ type: "social", channel: "github", name: "GitHub", normalize: normalizeHandle, mask: maskAccount });
