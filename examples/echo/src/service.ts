import { createProvider, type Provider, type ProviderEnv } from '@farebox/provider';

/**
 * The echo service: a fixed price of 0.001 USDC per call, answers with the
 * payload it was paid for. Runs on the local network: the registry is the
 * devnet's (FAREBOX_DEVNET_URL), and paid calls are served once
 * `bootstrap()` has registered the service there.
 */
export function createEchoService(env: ProviderEnv = process.env): Provider {
  return createProvider({
    service: 'echo',
    pricePerCall: '0.001',
    pricingNote: 'flat 0.001 USDC per call',
    description: 'Echoes the JSON payload back. Input: any JSON value. Output: { "echo": <the payload>, "receivedAt": <unix ms> }.',
    network: 'local',
    env,
  }).serve((payload) => ({ echo: payload, receivedAt: Date.now() }));
}
