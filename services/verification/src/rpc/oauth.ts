import type { OAuthOutcome, OAuthSignIn } from "../oauth/sign-in.ts";

/** The OAuth sign-in RPCs of VerificationService (no tenant scope: the link token or the state names the verification). */
export function oauthHandlers(signIn: OAuthSignIn) {
  const msg = (o: OAuthOutcome) => ({
    outcome: {
      outcome: o.outcome,
      channel: o.channel,
      identifier: o.identifier,
      attemptsRemaining: o.attemptsRemaining ?? 0,
      authorizationUrl: o.authorizationUrl,
      retryUrl: o.retryUrl,
      returnUrl: o.returnUrl,
    },
  });
  return {
    async startOAuthSignIn(req: { channel: string; token: string }) {
      return msg(await signIn.start(req.channel, req.token));
    },
    async completeOAuthSignIn(req: { channel: string; params: Record<string, string> }) {
      return msg(await signIn.callback(req.channel, new URLSearchParams(req.params)));
    },
  };
}
