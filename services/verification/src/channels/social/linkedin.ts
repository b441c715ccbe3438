/** A LinkedIn account: the account's email address (an OIDC sign-in), confirmed by signing in with LinkedIn. */
import { oauthChannel } from "../shared/oauth-channel.ts";
import { maskAccount } from "../shared/mask.ts";
import { normalizeSignInEmail } from "./handle.ts";

export const linkedin = oauthChannel({ type: "social", channel: "linkedin", name: "LinkedIn", normalize: normalizeSignInEmail, mask: maskAccount });
