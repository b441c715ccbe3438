/**
 * Smart-contract wallet signatures (ERC-1271, and ERC-6492 for wallets not deployed yet), checked
 * by viem's `verifyMessage` on a public client over the configured JSON-RPC node
 * (ETHEREUM_RPC_URL; never a caller's URL): an `eth_call` of the wallet's `isValidSignature`
 * through the ERC-6492 universal validator. One client per node, reused by every check.
 *
 * The node answers for the chain it reports (`eth_chainId`, asked once). A wallet contract exists
 * on one chain: a verification whose message names another chain id is not checked here.
 */
import { AppError, type Config } from "@icv/platform";
import type { PublicClient } from "viem";

export interface EthereumRpc {
  /** The chain id the node serves. Throws service_unavailable when the node does not answer. */
  chainId(): Promise<number>;
  /** Whether the wallet contract (or key) at `address` accepts `signature` for `message`. */
  verifyMessage(address: `0x${string}`, message: string, signature: `0x${string}`): Promise<boolean>;
}

const clients = new Map<string, EthereumRpc>();

/** The node of this configuration, or undefined when ETHEREUM_RPC_URL is unset. */
export function ethereumRpc(config: Config): EthereumRpc | undefined {
  const url = config.ETHEREUM_RPC_URL;
  if (!url) return undefined;
  const key = `${url} ${config.ETHEREUM_RPC_TIMEOUT_MS}`;
  let rpc = clients.get(key);
  if (!rpc) {
    rpc = makeRpc(url, config.ETHEREUM_RPC_TIMEOUT_MS);
    clients.set(key, rpc);
  }
  return rpc;
}

function unavailable(): never {
  // The node's address and its error text stay out of the answer (and the attempt is not counted).
  throw new AppError("service_unavailable", "the Ethereum node that checks smart-contract wallet signatures did not answer; try again");
}

function makeRpc(url: string, timeout: number): EthereumRpc {
  // viem reads a failed eth_call as "not valid" whatever the cause, so the failures of the node
  // itself (no connection, timeout, an HTTP error) are counted here, to tell them apart.
  let failures = 0;
  // viem is loaded on the first use, not at start
  let loaded: Promise<PublicClient> | undefined;
  const client = () => (loaded ??= import("viem").then(({ createPublicClient, http }) => createPublicClient({ transport: http(url, transportOptions) })));
  const transportOptions = {
    timeout,
    retryCount: 1,
    maxResponseBodySize: 1_000_000,
    fetchFn: (input: RequestInfo | URL, init?: RequestInit) =>
      fetch(input, init).catch((e: unknown) => {
        failures++;
        throw e;
      }),
    onFetchResponse: (res: Response) => {
      if (!res.ok) failures++;
    },
  };
  let chain: Promise<number> | undefined;
  return {
    chainId() {
      chain ??= client()
        .then((c) => c.getChainId())
        .catch(() => {
          chain = undefined;
          return unavailable();
        });
      return chain;
    },
    async verifyMessage(address, message, signature) {
      // false: the contract refused or reverted, unless the node failed meanwhile (then no verdict)
      const before = failures;
      const ok = await client()
        .then((c) => c.verifyMessage({ address, message, signature }))
        .catch(() => unavailable());
      if (!ok && failures !== before) unavailable();
      return ok;
    },
  };
}
