import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Keypair, StrKey } from '@stellar/stellar-sdk';
import { createClient } from '@farebox/client';
import { verifyDisputeProof } from '@farebox/gateway-core';
import { createProvider } from '@farebox/provider';
import { TESTNET_PASSPHRASE, resolveNetwork } from '@farebox/stellar';
import { startStack, type Stack } from './settlement-kit.js';
import { USDC, fundedNotServed, newCaller } from './dispute-kit.js';

// SDK instances for different networks in one process: every preset and cache
// belongs to its instance. The testnet instance only resolves its config and
// builds requests (captured by its own fetch): nothing here reaches the network.
let s: Stack;
beforeAll(async () => {
  s = await startStack({ env: { FAREBOX_DISPUTE_AUTO_REFUND_MINUTES: '0' } });
  await s.publish('net-down', '0.5', () => {
    throw new Error('down');
  });
}, 60_000);
afterAll(async () => {
  await s?.close();
});

const TESTNET_REGISTRY = StrKey.encodeContract(Buffer.alloc(32, 7));

describe('a local-network and a testnet-configured instance side by side', () => {
  it('keep their own presets, escrow provider, platform and proofs while the local one pays and disputes on the devnet', async () => {
    const seen: Array<{ url: string; body?: string }> = [];
    const testnetFetch: typeof fetch = async (input, init) => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      seen.push({ url, ...(typeof init?.body === 'string' ? { body: init.body } : {}) });
      if (url.endsWith('/v1/platform/key')) return Response.json({ treasury: Keypair.random().publicKey() });
      if (url.includes('/helper/get-escrow-by-contract-ids')) return Response.json([]);
      if (url.endsWith('/v1/disputes')) {
        const body = JSON.parse(String(init?.body)) as { escrowId: string };
        return Response.json({ escrow_id: body.escrowId, state: 'open' }, { status: 201 });
      }
      return new Response('{}', { status: 404 });
    };
    const testnetKey = Keypair.random();
    const testnet = createClient({
      network: 'testnet',
      contractId: TESTNET_REGISTRY,
      secret: testnetKey.secret(),
      escrow: { apiKey: 'tw-key' },
      gatewayUrl: 'https://farebox.example',
      fetch: testnetFetch,
      env: {},
    });
    const testnetProvider = createProvider({
      service: 'net-testnet',
      pricePerCall: '0.5',
      description: 'testnet twin',
      network: 'testnet',
      contractId: TESTNET_REGISTRY,
      ownerWallet: testnetKey.publicKey(),
      platform: { publicKey: Keypair.random().publicKey() },
      env: {},
    });
    const snapshot = () =>
      JSON.parse(
        JSON.stringify(
          { net: testnet.network, explorer: testnet.network.explorer.tx('ab'), provider: testnetProvider.config, manifest: testnetProvider.manifest() },
          (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v),
        ),
      ) as unknown;
    const before = snapshot();

    const caller = await newCaller(s, 5n * USDC);
    const local = caller.client;
    expect(local.network).toMatchObject({ name: 'local', x402Network: 'stellar:local' });
    expect(testnet.network).toMatchObject({
      name: 'testnet',
      passphrase: TESTNET_PASSPHRASE,
      rpcUrl: 'https://soroban-testnet.stellar.org',
      horizonUrl: 'https://horizon-testnet.stellar.org',
      registryContractId: TESTNET_REGISTRY,
      x402Network: 'stellar:testnet',
    });
    expect(local.network.passphrase).not.toBe(testnet.network.passphrase);
    expect(local.network.rpcUrl).not.toBe(testnet.network.rpcUrl);
    expect(local.network.registryContractId).not.toBe(testnet.network.registryContractId);
    expect(local.network.usdc.contractId).not.toBe(testnet.network.usdc.contractId);
    expect(local.network.usdc.issuer).not.toBe(testnet.network.usdc.issuer);
    expect(testnetProvider.config).toMatchObject({ network: 'testnet', x402Network: 'stellar:testnet' });

    // The local instance pays a service that is down, then disputes through its platform: refunded on the devnet.
    const escrowId = await fundedNotServed(caller, 'net-down');
    expect(await local.dispute(escrowId)).toMatchObject({ state: 'resolved', resolution: 'refund' });
    // A second local-network instance in the same process resolves the same way and sees the same chain.
    const twin = createClient({ network: resolveNetwork({ network: 'local', devnetUrl: s.devnet.url, env: {} }), escrow: { apiKey: 'farebox-test' }, env: {} });
    expect(await twin.getEscrow(escrowId)).toMatchObject({ flags: { resolved: true } });

    // The testnet instance is untouched and talks only to its own endpoints.
    expect(snapshot()).toEqual(before);
    await testnet.getEscrow(escrowId);
    const proofEscrow = StrKey.encodeContract(Buffer.alloc(32, 9));
    expect(await testnet.dispute(proofEscrow)).toMatchObject({ escrowId: proofEscrow, state: 'open' });
    expect(seen.map((r) => new URL(r.url).origin)).toEqual(['https://dev.api.trustlesswork.com', 'https://farebox.example']);
    const proof = (JSON.parse(seen[1]!.body!) as { proof: string }).proof;
    // The proof is signed for testnet: it verifies with the testnet passphrase only.
    expect(verifyDisputeProof(proof, TESTNET_PASSPHRASE, proofEscrow)).toBe(testnetKey.publicKey());
    expect(() => verifyDisputeProof(proof, s.gw.core.network.passphrase, proofEscrow)).toThrow(/invalid dispute proof/);
    expect(seen.every((r) => !r.url.startsWith(s.devnet.url) && !r.url.startsWith(s.url))).toBe(true);
  });
});
