import { ConfigError } from '@farebox/protocol';
import { resolveNetwork } from '@farebox/stellar';
import { DEFAULT_NETWORK, networkFromEnv, resolveGatewayConfig, type GatewayConfig } from '../config.js';
import { resolveOperatorConfig } from '../operator/index.js';
import { resolveSettlementConfig } from '../settlement/config.js';
import type { CreateGatewayOptions } from '../gateway-types.js';

/**
 * Validates every setting before anything starts (the gateway's own, the
 * settlement network's, settlement's and the operators') and reports every
 * problem together.
 */
export function checkConfiguration(options: CreateGatewayOptions, env: Record<string, string | undefined>): GatewayConfig {
  const problems: string[] = [];
  const collect = <T>(fn: () => T): T | undefined => {
    try {
      return fn();
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(...err.problems);
      return undefined;
    }
  };
  const config = collect(() => resolveGatewayConfig({ ...options, ...(options.wallets ? { keystoreKeyProvided: true } : {}) }));
  // When the gateway's own settings are wrong, the others are still checked (against the named network).
  const named = options.network ?? networkFromEnv(env).network ?? DEFAULT_NETWORK;
  const networkName = config?.network ?? (named === 'local' || named === 'mainnet' ? named : 'testnet');
  const devnetUrl = config?.devnetUrl ?? 'http://127.0.0.1/devnet';
  collect(() => resolveNetwork({ network: networkName, devnetUrl, env }));
  collect(() => resolveSettlementConfig(options.settlement ?? {}, env, networkName, devnetUrl));
  collect(() => resolveOperatorConfig(env));
  if (!config || problems.length) throw new ConfigError(problems);
  return config;
}
