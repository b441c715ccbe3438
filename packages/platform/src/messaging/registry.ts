import type { ConfigShape, MessagingProvider } from "./provider.ts";
import { telegram } from "./telegram.ts";
import { sms } from "./twilio.ts";
import { viber } from "./viber.ts";
import { whatsapp } from "./whatsapp.ts";

/**
 * The messaging providers by channel name: the only list of them. The configuration, the
 * session service's inbound handling, the gateway's hooks (`/hooks/<name>`) and the phone
 * channels' addresses and deep links all read this table; a provider is one file plus one line here.
 */
export const MESSAGING_PROVIDERS = { whatsapp, telegram, sms, viber } as const;

export type MessagingChannel = keyof typeof MESSAGING_PROVIDERS;

type Providers = typeof MESSAGING_PROVIDERS;
type UnionToIntersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;
export type MessagingConfigShape = UnionToIntersection<Providers[keyof Providers]["config"]>;

/** Every provider's configuration keys with their validation, for config.ts. */
export const MESSAGING_CONFIG = Object.assign({}, ...Object.values(MESSAGING_PROVIDERS).map((p) => p.config)) as MessagingConfigShape;

/** The providers, widened to the common contract (their settings are read from the whole configuration). */
export const messagingProviders = (): [MessagingChannel, MessagingProvider<ConfigShape>][] =>
  Object.entries(MESSAGING_PROVIDERS) as unknown as [MessagingChannel, MessagingProvider<ConfigShape>][];

export const isMessagingChannel = (name: string): name is MessagingChannel => Object.hasOwn(MESSAGING_PROVIDERS, name);

/** The provider of a channel, widened to the common contract. */
export const messagingProvider = (name: MessagingChannel): MessagingProvider<ConfigShape> =>
  MESSAGING_PROVIDERS[name] as unknown as MessagingProvider<ConfigShape>;
