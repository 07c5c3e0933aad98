import { createHash } from 'node:crypto';
import { createEscrowClient } from '@farebox/escrow';
import { keypairSigner, type NetworkConfig } from '@farebox/stellar';
import type { ResolvedProviderConfig } from './config.js';
import { createEscrowVerifier, type FareboxEscrowVerifier } from './escrow-verifier.js';
import { FileServedEscrowStore } from './served-store.js';

/**
 * The verifier a provider builds when an escrow API key is configured and no
 * `escrowVerifier` is given: the escrow provider's client, the owner's key as
 * release signer, a file store, and quote ids keyed by the owner's secret (so
 * quotes survive restarts). None without the owner's secret: it could not release.
 */
export function defaultEscrowVerifier(
  config: ResolvedProviderConfig,
  stellar: NetworkConfig,
  walletSecret: string | undefined,
  apiKey: string | undefined,
): FareboxEscrowVerifier | undefined {
  const { escrow } = config;
  if (!escrow.enabled || !apiKey || !walletSecret || !escrow.baseUrl || !escrow.servedStorePath) return undefined;
  return createEscrowVerifier({
    escrow: createEscrowClient({ baseUrl: escrow.baseUrl, apiKey, passphrase: stellar.passphrase, ...(escrow.budget ? { budget: escrow.budget } : {}) }),
    signer: keypairSigner(walletSecret),
    servedStore: new FileServedEscrowStore(escrow.servedStorePath),
    network: config.x402Network,
    ...(escrow.platformAddress ? { platformAddress: escrow.platformAddress } : {}),
    asset: { contractId: stellar.usdc.contractId, issuer: stellar.usdc.issuer },
    quoteKey: createHash('sha256').update(`farebox-quote-key-v1\n${walletSecret}`).digest(),
  });
}
