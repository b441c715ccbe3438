/**
 * Which addresses the checks may send to: public unicast only (the platform's outbound rules),
 * unless ALLOW_PRIVATE_TARGETS; `allowAddresses` lets a few private addresses or CIDRs through
 * (narrower than allowPrivate: tests on loopback that still prove every other address refused).
 * Applies to the domain's web site and to its authoritative name servers (an NS record pointing
 * at 10.0.0.5 must not make us send packets inside our network); not to DNS_RESOLVERS, which
 * the operator chose.
 */
import ipaddr from "ipaddr.js";
import { addressRefusal } from "@icv/platform";

export interface TargetRules {
  /** ALLOW_PRIVATE_TARGETS: private and loopback addresses allowed. */
  allowPrivate: boolean;
  /** Addresses or CIDRs allowed although private. */
  allowAddresses?: string[];
}

/** The exception list as a predicate (undefined when empty). */
export function allowListOf(list: readonly string[] | undefined): ((address: string) => boolean) | undefined {
  const ranges = (list ?? []).map((a): [ipaddr.IPv4 | ipaddr.IPv6, number] => {
    if (a.includes("/")) return ipaddr.parseCIDR(a);
    const ip = ipaddr.parse(a);
    return [ip, ip.kind() === "ipv4" ? 32 : 128];
  });
  if (!ranges.length) return undefined;
  return (address) => {
    if (!ipaddr.isValid(address)) return false;
    const ip = ipaddr.parse(address);
    return ranges.some(([net, bits]) => ip.kind() === net.kind() && ip.match(net, bits));
  };
}

/** Why `address` may not be sent to under these rules, or undefined. */
export function targetRefusal(address: string, rules: TargetRules, allowed = allowListOf(rules.allowAddresses)): string | undefined {
  if (rules.allowPrivate || allowed?.(address)) return undefined;
  return addressRefusal(address);
}
