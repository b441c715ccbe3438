/** The DNS hosts channel `auto` can write to: the one place that picks a host's client by name. */
import { cloudflare } from "./cloudflare.ts";
import { digitalocean } from "./digitalocean.ts";
import { godaddy } from "./godaddy.ts";
import type { DnsHostDefinition } from "./provider.ts";
import { route53 } from "./route53.ts";

export const DNS_HOST_APIS: Readonly<Record<string, DnsHostDefinition>> = { cloudflare, digitalocean, godaddy, route53 };

export { ProviderError, type DnsHostClient, type DnsHostDefinition, type WrittenRecord } from "./provider.ts";
