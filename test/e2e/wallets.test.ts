// Wallet signatures as modern wallets make them, through the public API: BIP-322 for segwit and
// taproot bitcoin addresses; smart-contract wallets (ERC-1271, ERC-6492) checked on the configured
// Ethereum node (a local JSON-RPC server answering eth_call as the chain would); the chain id of
// the create body in the message to sign. This stack keeps the SSRF guard on (no private targets).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { parseSiweMessage } from "viem/siwe";
import { serializeErc6492Signature, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";
import { expectError } from "../support/expect-error.ts";
import { bip322Address, bip322Sign, type Bip322Kind } from "../support/bip322.ts";
import { startEthereumNode, type EthereumNode } from "../support/ethereum-node.ts";

const owner = privateKeyToAccount(generatePrivateKey());
const SAFE: Hex = "0x5afe000000000000000000000000000000000001";
const COUNTERFACTUAL: Hex = "0x5afe000000000000000000000000000000000002";
const FACTORY = { address: "0xfac7000000000000000000000000000000000001" as Hex, data: "0x5fbfb9cf0001" as Hex };

let node: EthereumNode;
const env: Record<string, string> = {};
beforeAll(async () => {
  node = await startEthereumNode({
    chainId: 1,
    wallets: [
      { address: SAFE, owner: owner.address },
      { address: COUNTERFACTUAL, owner: owner.address, factory: FACTORY },
    ],
  });
  env.ETHEREUM_RPC_URL = node.url;
  env.ETHEREUM_RPC_TIMEOUT_MS = "2000";
});
afterAll(() => node?.close());

const stack = useStack(env);
const t = useTenant(stack, "Wallets");
let c: ReturnType<typeof api>;

beforeAll(() => {
  c = api(stack.url, t.testKey);
});

describe("bitcoin BIP-322", () => {
  for (const kind of ["p2tr", "p2wpkh"] as Bip322Kind[]) {
    it(`${kind}: completes with the wallet's BIP-322 signature of challenge.message, after refusing another key's`, async () => {
      const secret = secp256k1.utils.randomSecretKey();
      const address = bip322Address(secret, kind);
      const r = await c.post("/api/v1/verifications", { type: "wallet", channel: "bitcoin", identifier: address });
      expect(r.status, r.text).toBe(201);
      const message: string = r.body.challenge.message;
      expect(message).toContain(address);

      const intruder = bip322Sign(secp256k1.utils.randomSecretKey(), message, kind);
      const e = expectError(await c.post(`/api/v1/verifications/${r.body.id}/submit`, { signature: intruder }), 400, "invalid_signature");
      expect(e.attempts_remaining).toBe(4);
      // The right key over another message (a replayed signature) proves nothing either.
      const replay = bip322Sign(secret, message.replace(/^Nonce: .*$/m, "Nonce: 0000000000000000"), kind);
      expectError(await c.post(`/api/v1/verifications/${r.body.id}/submit`, { signature: replay }), 400, "invalid_signature");

      const ok = await c.post(`/api/v1/verifications/${r.body.id}/submit`, { signature: bip322Sign(secret, message, kind) });
      expect(ok.status, ok.text).toBe(200);
      expect(ok.body).toMatchObject({ id: r.body.id, status: "verified", method: "signature" });
      const valid = await c.post("/api/v1/proofs/validate", { proof_token: ok.body.proof.token, identifier: address });
      expect(valid.body).toMatchObject({
        valid: true,
        verification: { id: r.body.id, type: "wallet", channel: "bitcoin", method: "signature" },
      });
    });
  }
});

describe("ethereum smart-contract wallets (ETHEREUM_RPC_URL set)", () => {
  async function create(identifier: string, extra: Record<string, unknown> = {}) {
    const r = await c.post("/api/v1/verifications", { type: "wallet", channel: "ethereum", identifier, ...extra });
    expect(r.status, r.text).toBe(201);
    return { id: r.body.id as string, message: r.body.challenge.message as string };
  }

  it("ERC-1271: the wallet contract's owner signs challenge.message; another message's signature is refused first", async () => {
    const v = await create(SAFE);
    expect(parseSiweMessage(v.message).chainId).toBe(1);
    const wrongHash = await owner.signMessage({ message: v.message.replace(/^Nonce: .*$/m, "Nonce: 0000000000000000") });
    expectError(await c.post(`/api/v1/verifications/${v.id}/submit`, { signature: wrongHash }), 400, "invalid_signature");
    const ok = await c.post(`/api/v1/verifications/${v.id}/submit`, { signature: await owner.signMessage({ message: v.message }) });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toMatchObject({ status: "verified", method: "signature" });
    expect(ok.body.identifier.toLowerCase()).toBe(SAFE);
    expect(node.calls.some((call) => call.method === "eth_call")).toBe(true);
  });

  it("ERC-6492: a wallet not deployed yet signs with its factory call wrapped around the owner's signature", async () => {
    const v = await create(COUNTERFACTUAL);
    const signature = serializeErc6492Signature({ ...FACTORY, signature: await owner.signMessage({ message: v.message }) });
    expect(signature.length).toBeGreaterThan(2 + 65 * 2); // more than a plain 65-byte signature
    const ok = await c.post(`/api/v1/verifications/${v.id}/submit`, { signature });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.status).toBe("verified");
  });

  it("chain_id names the chain in the message; a contract wallet on a chain the node does not serve is refused, an EOA is not", async () => {
    const v = await create(SAFE, { chain_id: 8453 });
    expect(v.message).toMatch(/^Chain ID: 8453$/m);
    expect(parseSiweMessage(v.message).chainId).toBe(8453);
    expectError(await c.post(`/api/v1/verifications/${v.id}/submit`, { signature: await owner.signMessage({ message: v.message }) }), 400, "invalid_signature");

    const eoa = await create(owner.address, { chain_id: 8453 });
    const calls = node.calls.length;
    const ok = await c.post(`/api/v1/verifications/${eoa.id}/submit`, { signature: await owner.signMessage({ message: eoa.message }) });
    expect(ok.status, ok.text).toBe(200);
    expect(node.calls.length).toBe(calls); // a key's own signature needs no node

    expectError(
      await c.post("/api/v1/verifications", {
        type: "wallet",
        channel: "solana",
        identifier: "7EcDhSYGxXyscszYEp35KHN8vvw3svAuLKTzXwCFLtV",
        chain_id: 1,
      }),
      400,
      "validation_error",
    );
    for (const bad of [0, -1, 1.5, "1"]) {
      expectError(
        await c.post("/api/v1/verifications", { type: "wallet", channel: "ethereum", identifier: owner.address, chain_id: bad }),
        400,
        "validation_error",
      );
    }
  });

  it("a slow node is service_unavailable and costs the user no attempt", async () => {
    const v = await create(SAFE);
    const signature = await owner.signMessage({ message: v.message });
    node.delayMs = 5_000;
    try {
      expectError(await c.post(`/api/v1/verifications/${v.id}/submit`, { signature }), 503, "service_unavailable");
    } finally {
      node.delayMs = 0;
    }
    expect((await c.get(`/api/v1/verifications/${v.id}`)).body).toMatchObject({ status: "pending", attempts: 0 });
    expect((await c.post(`/api/v1/verifications/${v.id}/submit`, { signature })).status).toBe(200);
  });
});

describe("a verification's callback_url and the SSRF guard", () => {
  it("refuses loopback, private and metadata addresses at create, and stores nothing", async () => {
    const before = (await c.get("/api/v1/verifications")).body.pagination.total;
    for (const url of ["http://127.0.0.1:9/hook", "http://[::1]/hook", "http://169.254.169.254/latest/meta-data", "http://10.0.0.7/x", "http://localhost/x"]) {
      const e = expectError(
        await c.post("/api/v1/verifications", { type: "email", channel: "email", identifier: "ssrf@example.com", callback_url: url }),
        400,
        "validation_error",
      );
      expect(e.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: "callback_url" })]));
    }
    expect((await c.get("/api/v1/verifications")).body.pagination.total).toBe(before);
  });
});
