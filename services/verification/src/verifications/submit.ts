/** The user's answer to a challenge (code, signature, bot token, API key), and test-verify. */
import { AppError, type Scope } from "@icv/platform";
import { channelFor } from "../channels/registry.ts";
import type { VerificationRow } from "../store/rows.ts";
import { completeVerification, failAttempt } from "./complete.ts";
import type { SubmitInput, UseCaseDeps } from "./deps.ts";
import { getVerification, pendingForAction } from "./read.ts";

export async function submitChallenge(deps: UseCaseDeps, scope: Scope, id: string, input: SubmitInput): Promise<VerificationRow> {
  const v = await pendingForAction(deps, scope, id);
  // the channel checks the evidence (code, signature, bot token) or refuses it (OAuth, DNS/HTTP checks)
  const verdict = await channelFor(v.type, v.channel).complete(v, input, { hmacKey: deps.hmacKey, config: deps.config });
  if (!verdict.ok) return failAttempt(deps, scope, v, verdict.failure);
  return completeVerification(deps, scope, v, verdict.method);
}

export async function testVerify(deps: UseCaseDeps, scope: Scope, id: string): Promise<VerificationRow> {
  if (scope.env !== "test") throw new AppError("test_mode_required", "test-verify needs a test key (pk_test_)");
  // a verification this process just created needs no read (store.takeCreated); the update that
  // completes it moves it only if it is still pending
  const v = deps.store.takeCreated(scope, id, deps.clock.now()) ?? (await getVerification(deps, scope, id));
  if (v.status === "verified") return v; // a retry after a lost answer gets the same proof
  return completeVerification(deps, scope, await pendingForAction(deps, scope, id, v), "test");
}
