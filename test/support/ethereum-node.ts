/**
 * A local Ethereum JSON-RPC node for tests. It answers `eth_chainId` and `eth_call` as a real
 * node answers them for a chain holding smart-contract wallets, each owned by one key:
 *
 * - `isValidSignature(bytes32 hash, bytes signature)` called on a deployed wallet (ERC-1271):
 *   the magic value 0x1626ba7e when the owner's key signed exactly `hash`, else 0xffffffff;
 * - the ERC-6492 universal validator run deployless (no `to`; its bytecode, then the ABI-encoded
 *   signer, hash and signature): a wrapped signature of a wallet not deployed yet "deploys" it when
 *   the factory call is the wallet's own, then asks the wallet as above; a signer without code is
 *   checked by ecrecover. The answer is one byte, 0x01 or 0x00, as the validator returns it.
 *
 * Every request is recorded (`calls`), and `delayMs` makes the node slow.
 */
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import {
  decodeAbiParameters,
  decodeFunctionData,
  encodeFunctionResult,
  erc6492SignatureValidatorByteCode,
  isAddressEqual,
  isErc6492Signature,
  parseAbi,
  parseErc6492Signature,
  recoverAddress,
  type Hex,
} from "viem";

const ERC1271 = parseAbi(["function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)"]);
const MAGIC = "0x1626ba7e";

export interface ContractWallet {
  address: Hex;
  /** The key whose signatures the wallet accepts. */
  owner: Hex;
  /** Not deployed yet: the factory and call that deploy it (ERC-6492 counterfactual signatures). */
  factory?: { address: Hex; data: Hex };
}

export interface EthereumNode {
  url: string;
  calls: { method: string; params: unknown[] }[];
  delayMs: number;
  close(): Promise<void>;
}

async function ownerSigned(wallet: ContractWallet, hash: Hex, signature: Hex): Promise<boolean> {
  try {
    return isAddressEqual(await recoverAddress({ hash, signature }), wallet.owner);
  } catch {
    return false;
  }
}

export async function startEthereumNode(opts: { chainId: number; wallets: ContractWallet[] }): Promise<EthereumNode> {
  const find = (a: string) => opts.wallets.find((w) => isAddressEqual(w.address, a as Hex));

  /** The universal validator's verdict for (signer, hash, signature). */
  async function validate(signer: Hex, hash: Hex, signature: Hex): Promise<boolean> {
    const wallet = find(signer);
    if (isErc6492Signature(signature)) {
      const { address, data, signature: inner } = parseErc6492Signature(signature);
      // The validator runs the factory call first when the signer has no code.
      const deploys = wallet?.factory && address && isAddressEqual(address, wallet.factory.address) && data === wallet.factory.data;
      if (!wallet || (wallet.factory && !deploys)) return false;
      return ownerSigned(wallet, hash, inner);
    }
    if (wallet) return !wallet.factory && ownerSigned(wallet, hash, signature);
    try {
      return isAddressEqual(await recoverAddress({ hash, signature }), signer);
    } catch {
      return false;
    }
  }

  async function ethCall(tx: { to?: Hex; data?: Hex }): Promise<Hex> {
    const data = (tx.data ?? "0x").toLowerCase() as Hex;
    if (!tx.to) {
      const code = erc6492SignatureValidatorByteCode.toLowerCase();
      if (!data.startsWith(code)) throw new Error("execution reverted");
      const [signer, hash, signature] = decodeAbiParameters([{ type: "address" }, { type: "bytes32" }, { type: "bytes" }], `0x${data.slice(code.length)}`);
      return (await validate(signer, hash, signature)) ? "0x01" : "0x00";
    }
    const wallet = find(tx.to);
    if (!wallet || wallet.factory) return "0x"; // no code at that address
    const { args } = decodeFunctionData({ abi: ERC1271, data });
    const ok = await ownerSigned(wallet, args[0], args[1]);
    return encodeFunctionResult({ abi: ERC1271, functionName: "isValidSignature", result: ok ? MAGIC : "0xffffffff" });
  }

  const node: EthereumNode = { url: "", calls: [], delayMs: 0, close: async () => {} };

  async function answer(req: { id: unknown; method: string; params?: unknown[] }) {
    node.calls.push({ method: req.method, params: req.params ?? [] });
    try {
      switch (req.method) {
        case "eth_chainId":
          return { jsonrpc: "2.0", id: req.id, result: `0x${opts.chainId.toString(16)}` };
        case "eth_call":
          return { jsonrpc: "2.0", id: req.id, result: await ethCall((req.params?.[0] ?? {}) as { to?: Hex; data?: Hex }) };
        default:
          return { jsonrpc: "2.0", id: req.id, error: { code: -32601, message: "the method does not exist" } };
      }
    } catch (e) {
      return { jsonrpc: "2.0", id: req.id, error: { code: 3, message: (e as Error).message, data: "0x" } };
    }
  }

  const read = async (req: IncomingMessage) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    return JSON.parse(body);
  };

  const server = createServer(async (req, res) => {
    const body = await read(req);
    if (node.delayMs) await new Promise((r) => setTimeout(r, node.delayMs));
    const out = Array.isArray(body) ? await Promise.all(body.map(answer)) : await answer(body);
    if (res.destroyed) return;
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(out));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  node.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  node.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return node;
}
