import { createProvider, type Provider, type ProviderEnv } from '@farebox/provider';

/**
 * The echo service: a fixed price of 0.001 USDC per call, answers with the
 * payload it was paid for. Runs on the local network without a registry
 * check (allowUnverified) until the local stack registers it.
 */
export function createEchoService(env: ProviderEnv = process.env): Provider {
  return createProvider({
    service: 'echo',
    pricePerCall: '0.001',
    pricingNote: 'flat 0.001 USDC per call',
    description: 'Echoes the JSON payload back. Input: any JSON value. Output: { "echo": <the payload>, "receivedAt": <unix ms> }.',
    network: 'local',
    allowUnverified: true,
    env,
  }).serve((payload) => ({ echo: payload, receivedAt: Date.now() }));
}
