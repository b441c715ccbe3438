import { z } from "zod";

/**
 * A section of the configuration declared beside the code that reads it (a messaging provider's
 * file, a verification channel's file): its environment variables with their zod validation.
 * parseConfig composes the sections it is given with its own keys.
 */
export type ConfigShape = Record<string, z.ZodType>;

/** The parsed values of a section's keys. */
export type SettingsOf<S extends ConfigShape> = z.output<z.ZodObject<S>>;

const PROVIDER_URLS = new WeakSet<z.ZodType>();

/**
 * A provider's endpoint URL (an OAuth provider's token URL, Kraken's API): with a default, the
 * provider's real endpoint. parseConfig refuses one that is not https:// unless
 * ALLOW_PRIVATE_TARGETS is on (a local stand-in), whichever section declares it. Declare the key
 * with this schema as it is (a wrapper around it is not marked).
 */
export function providerUrl(real: string): z.ZodDefault<z.ZodString>;
export function providerUrl(): z.ZodOptional<z.ZodString>;
export function providerUrl(real?: string): z.ZodType {
  const schema = real === undefined ? z.string().url().optional() : z.string().url().default(real);
  PROVIDER_URLS.add(schema);
  return schema;
}

/** Whether a key's schema was made by providerUrl. */
export const isProviderUrl = (schema: z.ZodType): boolean => PROVIDER_URLS.has(schema);

/** A section's values in a configuration that parseConfig was given the section for, typed by the section. */
export const settingsOf = <S extends ConfigShape>(config: object, _section: S): SettingsOf<S> => config as SettingsOf<S>;
