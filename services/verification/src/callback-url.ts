import { AppError, checkTargetUrl, OutboundError, systemResolver, type Resolver } from "@icv/platform";

/** A tenant's callback URL (a request's or a verification's): http(s), no credentials, and (unless private targets are allowed) a public address. */
export async function checkCallbackUrl(input: string, allowPrivate: boolean, resolver: Resolver = systemResolver): Promise<string> {
  try {
    return (await checkTargetUrl(input, { allowPrivate, resolver })).toString();
  } catch (e) {
    if (e instanceof OutboundError)
      throw new AppError("validation_error", `invalid callback_url: ${e.message}`, {
        details: [{ field: "callback_url", message: `invalid callback_url: ${e.message}`, code: "invalid" }],
      });
    throw e;
  }
}
