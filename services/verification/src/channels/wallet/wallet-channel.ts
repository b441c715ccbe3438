/** What the wallet channels share: the message to sign (EIP-4361 for ethereum), its lifetime, and the signature check. */
import type { Config } from "@icv/platform";
import { MIN, type Channel, type CreateOptions, type NormalizedIdentifier } from "../channel.ts";
import { signatureEvidence } from "../shared/evidence.ts";
import { maskGeneric } from "../shared/mask.ts";
import { parseWith } from "../shared/parse.ts";
import { nonce } from "../shared/secrets.ts";
import { type SignatureOptions, verifyWalletSignature, type WalletChannel } from "./signatures.ts";

const TTL_MS = 10 * MIN;
const STATEMENT = "Sign this message to prove you control this wallet. It costs nothing and sends no transaction.";

/** The message a wallet signs: `lines` of the channel's own (after the host's header and the address), then the statement. */
export type WalletMessage = (m: { host: string; base: string; address: string; now: Date; expires: Date; options: CreateOptions }) => string;

/** A plain signed statement (solana, bitcoin). */
export const plainMessage =
  (channel: string): WalletMessage =>
  ({ host, address, now }) =>
    [`${host} asks you to prove control of the ${channel} address:`, address, "", STATEMENT, "", `Nonce: ${nonce()}`, `Issued At: ${now.toISOString()}`].join(
      "\n",
    );

/** EIP-4361 (Sign-In with Ethereum). */
export const siweMessage: WalletMessage = ({ host, base, address, now, expires, options }) =>
  [
    `${host} wants you to sign in with your Ethereum account:`,
    address,
    "",
    STATEMENT,
    "",
    `URI: ${base}`,
    "Version: 1",
    `Chain ID: ${options.chain_id ?? 1}`,
    `Nonce: ${nonce()}`,
    `Issued At: ${now.toISOString()}`,
    `Expiration Time: ${expires.toISOString()}`,
  ].join("\n");

/** A wallet channel: its address form, the message it signs and the create options it takes. */
export function walletChannel(spec: {
  channel: WalletChannel;
  name: string;
  normalize(raw: string): NormalizedIdentifier;
  message: WalletMessage;
  options: Channel["options"];
  browserWallet?: "eip1193";
  /** What the signature check needs from the configuration (ethereum: the node that checks contract wallets). */
  checkWith?: (config: Config) => SignatureOptions;
}): Channel {
  const { channel } = spec;
  return {
    type: "wallet",
    channel,
    method: "signature",
    ttlMs: TTL_MS,
    options: spec.options,
    evidence: signatureEvidence,
    form: {
      name: spec.name,
      deliveries: [],
      step: "sign",
      fields: [{ name: "signature", label: "Signature", input: "textarea" }],
      ...(spec.browserWallet && { browserWallet: spec.browserWallet }),
    },
    missingProvider: (_config: Config) => [],
    normalize: spec.normalize,
    challenge({ identifier, now, config, options }) {
      const expires = new Date(now.getTime() + TTL_MS);
      const base = config.publicBaseUrl;
      return {
        showCode: false,
        expiresAt: expires,
        message: spec.message({ host: new URL(base).host, base, address: identifier, now, expires, options }),
        instruction: `Sign the message with the ${channel} wallet ${identifier} and submit the signature.`,
      };
    },
    async complete(v, body, ctx) {
      const { signature } = parseWith(signatureEvidence, body);
      const ok = await verifyWalletSignature(channel, v.identifier, v.challenge_message ?? "", signature, spec.checkWith?.(ctx.config) ?? {});
      return ok ? { ok: true, method: "signature" } : { ok: false, failure: ["invalid_signature", "the signature does not verify"] };
    },
    mask: maskGeneric,
  };
}
