import { AppError, checkTargetUrl, OutboundError, type Resolver } from "@icv/platform";

/** Where endpoints may point: private addresses only with ALLOW_PRIVATE_TARGETS (resolver: tests). */
export interface TargetRules {
  allowPrivate: boolean;
  resolver?: Resolver;
}

/** A tenant's endpoint URL: http(s), no credentials, at most 2048 characters, a public address. */
export async function validateEndpointUrl(url: string, rules: TargetRules): Promise<string> {
  try {
    return (await checkTargetUrl(url, rules)).toString();
  } catch (e) {
    if (e instanceof OutboundError) throw new AppError("validation_error", `invalid webhook URL: ${e.message}`);
    throw e;
  }
}
