import { randomBytes } from 'node:crypto';
import type { Devnet } from '@farebox/devnet';
import { LOCAL_PASSPHRASE, resolveNetwork } from '@farebox/stellar';

/**
 * The environment of a gateway configured for `testnet` whose network
 * endpoints are a devnet's: the gateway applies every testnet rule (paid
 * top-ups, no free credits, a keystore key required) while its transactions
 * really run, with real XDR and signatures, on the local chain.
 */
export function testnetOnDevnet(devnet: Devnet, extra: Record<string, string> = {}): Record<string, string> {
  const local = resolveNetwork({ network: 'local', devnetUrl: devnet.url, env: {} });
  return {
    STELLAR_NETWORK: 'testnet',
    STELLAR_RPC_URL: local.rpcUrl,
    STELLAR_HORIZON_URL: local.horizonUrl,
    STELLAR_NETWORK_PASSPHRASE: LOCAL_PASSPHRASE,
    STELLAR_USDC_ISSUER: local.usdc.issuer,
    STELLAR_FRIENDBOT_URL: local.friendbotUrl!,
    STELLAR_CONTRACT_ID: local.registryContractId!,
    STELLAR_EXPLORER_URL: `${devnet.url}/explorer/local`,
    TRUSTLESS_WORK_URL: `${devnet.url}/escrow`,
    TRUSTLESS_WORK_API_KEY: 'farebox-test',
    FAREBOX_KEYSTORE_KEY: randomBytes(32).toString('hex'),
    ...extra,
  };
}
