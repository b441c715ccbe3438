/**
 * The create options only some channels take (delivery, email_prefix, dns_provider, chain_id): a
 * channel's `options` schema names those it takes; the others are refused with the words of the
 * type that does take them.
 */
import { z } from "zod";
import type { CreateBody, CreateOptions } from "../channel.ts";
import { fail } from "./parse.ts";

/** A field this channel refuses when given: `message`, and `detail` as the details' message (default the same). */
export const refused = (field: string, message: string, detail = message) =>
  z
    .any()
    .optional()
    .transform((given: unknown, ctx) => {
      if (given !== undefined) fail(ctx, message, [{ field, message: detail, code: "invalid" }]);
      return undefined;
    });

/** The option fields in the order they are checked, refused by default. */
const NOT_TAKEN = {
  delivery: refused("delivery", "delivery is only for phone verifications", "phone only"),
  email_prefix: refused("email_prefix", "email_prefix is only for domain verifications", "domain only"),
  dns_provider: refused("dns_provider", "dns_provider is only for domain verifications", "domain only"),
  chain_id: refused("chain_id", "chain_id is only for ethereum wallets", "ethereum wallets only"),
};

/** The options schema of a channel that takes the fields of `shape` (and refuses every other option). */
export const takes = (shape: Partial<Record<keyof CreateOptions, z.ZodType<unknown>>> = {}) =>
  z.object({ ...NOT_TAKEN, ...shape }) as unknown as z.ZodType<CreateOptions, CreateBody>;
