/** A Google account: the account's email address (an OIDC sign-in), confirmed by signing in with Google. */
import { oauthChannel } from "../shared/oauth-channel.ts";
import { maskAccount } from "../shared/mask.ts";
import { normalizeSignInEmail } from "./handle.ts";

export const google = oauthChannel({ type: "social", channel: "google", name: "Google", normalize: normalizeSignInEmail, mask: maskAccount });
