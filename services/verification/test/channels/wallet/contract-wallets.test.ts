// Smart-contract wallets (ERC-1271, ERC-6492) checked on the configured Ethereum node, a local
// JSON-RPC server answering eth_call as the chain would; the chain id the message names; EOAs
// checked locally with no call; a node that does not answer is service_unavailable.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { serializeErc6492Signature, type Hex } from "viem";
import { AppError, parseConfig } from "@icv/platform";
import { verifyWalletSignature } from "../../../src/channels/wallet/signatures.ts";
import { ethereumRpc } from "../../../src/channels/wallet/contract-wallets.ts";
import { startEthereumNode, type EthereumNode } from "../../../../../test/support/ethereum-node.ts";

const owner = privateKeyToAccount(generatePrivateKey());
const stranger = privateKeyToAccount(generatePrivateKey());
const WALLET: Hex = "0x1111111111111111111111111111111111111111";
const UNDEPLOYED: Hex = "0x2222222222222222222222222222222222222222";
const FACTORY = { address: "0x3333333333333333333333333333333333333333" as Hex, data: "0xdeadbeef0001" as Hex };
// A wallet whose deployment call is long: its ERC-6492 signatures pass 1,024 characters.
const LONG_DEPLOY: Hex = "0x4444444444444444444444444444444444444444";
const LONG_FACTORY = { address: FACTORY.address, data: `0x${"ab".repeat(1500)}` as Hex };

function siwe(address: string, chainId = 1, nonce = "a1b2c3d4e5f60718"): string {
  return [
    "icv.example wants you to sign in with your Ethereum account:",
    address,
    "",
    "Sign this message to prove you control this wallet.",
    "",
    "URI: https://icv.example",
    "Version: 1",
    `Chain ID: ${chainId}`,
    `Nonce: ${nonce}`,
    "Issued At: 2026-01-01T00:00:00.000Z",
  ].join("\n");
}

let node: EthereumNode;
let rpc: ReturnType<typeof ethereumRpc>;
const check = (address: string, message: string, signature: string) => verifyWalletSignature("ethereum", address, message, signature, { ethereumRpc: rpc });

beforeAll(async () => {
  node = await startEthereumNode({
    chainId: 1,
    wallets: [
      { address: WALLET, owner: owner.address },
      { address: UNDEPLOYED, owner: owner.address, factory: FACTORY },
      { address: LONG_DEPLOY, owner: owner.address, factory: LONG_FACTORY },
    ],
  });
  rpc = ethereumRpc(parseConfig({ ETHEREUM_RPC_URL: node.url, ETHEREUM_RPC_TIMEOUT_MS: "300" }));
});
afterAll(() => node.close());

describe("ERC-1271: a deployed contract wallet", () => {
  it("accepts the owner's signature of the message, asking the node", async () => {
    const message = siwe(WALLET);
    const before = node.calls.filter((c) => c.method === "eth_call").length;
    expect(await check(WALLET, message, await owner.signMessage({ message }))).toBe(true);
    expect(await check(WALLET.toUpperCase().replace("0X", "0x"), message, await owner.signMessage({ message }))).toBe(true);
    expect(node.calls.filter((c) => c.method === "eth_call").length).toBeGreaterThan(before);
  });

  it("refuses the owner's signature of another message (wrong hash), and a stranger's", async () => {
    const message = siwe(WALLET);
    expect(await check(WALLET, message, await owner.signMessage({ message: siwe(WALLET, 1, "0000000000000000") }))).toBe(false);
    expect(await check(WALLET, message, await stranger.signMessage({ message }))).toBe(false);
    expect(await check(WALLET, message, "0x1234")).toBe(false);
  });

  it("without a node (ETHEREUM_RPC_URL unset) refuses it: EOA signatures only, as before", async () => {
    const message = siwe(WALLET);
    expect(await verifyWalletSignature("ethereum", WALLET, message, await owner.signMessage({ message }))).toBe(false);
    expect(ethereumRpc(parseConfig({}))).toBeUndefined();
  });
});

describe("ERC-6492: a wallet not deployed yet", () => {
  it("accepts the owner's signature wrapped with the wallet's own factory call", async () => {
    const message = siwe(UNDEPLOYED);
    const signature = serializeErc6492Signature({
      address: FACTORY.address,
      data: FACTORY.data,
      signature: await owner.signMessage({ message }),
    });
    expect(await check(UNDEPLOYED, message, signature)).toBe(true);
  });

  it("refuses another factory call, a stranger's inner signature, and a bare signature of the undeployed wallet", async () => {
    const message = siwe(UNDEPLOYED);
    const inner = await owner.signMessage({ message });
    expect(await check(UNDEPLOYED, message, serializeErc6492Signature({ address: FACTORY.address, data: "0xdeadbeef0002", signature: inner }))).toBe(false);
    expect(await check(UNDEPLOYED, message, serializeErc6492Signature({ ...FACTORY, signature: await stranger.signMessage({ message }) }))).toBe(false);
    expect(await check(UNDEPLOYED, message, inner)).toBe(false);
  });

  it("takes contract signatures up to 8192 characters with a node, and refuses longer ones without a call", async () => {
    const message = siwe(LONG_DEPLOY);
    const long = serializeErc6492Signature({ ...LONG_FACTORY, signature: await owner.signMessage({ message }) });
    expect(long.length).toBeGreaterThan(1024);
    expect(long.length).toBeLessThanOrEqual(8192);
    expect(await check(LONG_DEPLOY, message, long)).toBe(true);
    // the same without a node: over the 1,024-character limit of EOA signatures
    expect(await verifyWalletSignature("ethereum", LONG_DEPLOY, message, long)).toBe(false);
    const calls = node.calls.length;
    expect(await check(LONG_DEPLOY, message, `0x${"00".repeat(4100)}`)).toBe(false);
    expect(node.calls.length).toBe(calls);
  });
});

describe("EOAs and the chain id", () => {
  it("checks a key's own signature locally, without calling the node, whatever the chain", async () => {
    const calls = node.calls.length;
    for (const chainId of [1, 8453]) {
      const message = siwe(owner.address, chainId);
      expect(await check(owner.address, message, await owner.signMessage({ message }))).toBe(true);
    }
    expect(node.calls.length).toBe(calls);
  });

  it("refuses a contract wallet's signature for a chain the node does not serve (the wallet lives on one chain)", async () => {
    const message = siwe(WALLET, 8453);
    expect(await check(WALLET, message, await owner.signMessage({ message }))).toBe(false);
  });
});

describe("a node that does not answer", () => {
  it("is service_unavailable (the user's attempt is not the signature's fault), within the time limit", async () => {
    const message = siwe(WALLET);
    const signature = await owner.signMessage({ message });
    node.delayMs = 2_000;
    const started = Date.now();
    try {
      await expect(check(WALLET, message, signature)).rejects.toMatchObject({ code: "service_unavailable" });
    } finally {
      node.delayMs = 0;
    }
    expect(Date.now() - started).toBeLessThan(1_900);
    const gone = ethereumRpc(parseConfig({ ETHEREUM_RPC_URL: "http://127.0.0.1:9/", ETHEREUM_RPC_TIMEOUT_MS: "300" }));
    const err = await verifyWalletSignature("ethereum", WALLET, message, signature, { ethereumRpc: gone }).catch((e) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err.message).not.toContain("127.0.0.1");
  });
});
