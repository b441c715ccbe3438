/**
 * Why a fetch to a provider threw, in words that cannot contain the URL (a Bot API URL holds the
 * bot token): timed out, aborted, or the network error code.
 */
export function failureReason(e: unknown): string {
  const name = (e as { name?: unknown })?.name;
  if (name === "TimeoutError") return "timed out";
  if (name === "AbortError") return "aborted";
  const code = (e as { cause?: { code?: unknown } })?.cause?.code;
  return typeof code === "string" && /^[A-Z0-9_]+$/.test(code) ? `network error ${code}` : "network error";
}
