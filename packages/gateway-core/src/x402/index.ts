import { walletSigner } from '@farebox/wallets';
import type { GatewayCore } from '../gateway-types.js';
import { legacySink } from '../observability/log.js';
import type { RateLimitStore } from '../security/rate-limit.js';
import type { X402Settings } from './config.js';
import { createFacilitator, type Facilitator } from './facilitator.js';

export { createFacilitator } from './facilitator.js';
export type { CreateFacilitatorOptions, Facilitator, FacilitatorAnswer } from './facilitator.js';
export { resolveX402Config } from './config.js';
export type { X402ConfigOptions, X402Settings } from './config.js';
export { readSettledTransfer } from './transfer.js';
export type { SettledTransfer } from './transfer.js';

/**
 * The gateway's own facilitator (`/x402/*`): the treasury from its keystore,
 * the catalog mirror (the registry when the mirror has not seen a service
 * yet), its ledger, rate-limit store and `config.x402` settings (`settings`
 * and `rateLimits` replace them, e.g. for a second facilitator in a test).
 */
export function gatewayFacilitator(
  core: GatewayCore,
  options: { now?: () => number; settings?: Partial<X402Settings>; rateLimits?: RateLimitStore } = {},
): Facilitator {
  return createFacilitator({
    ledger: core.ledger,
    network: core.network,
    treasury: walletSigner(core.wallets, core.treasuryAddress),
    settings: { ...core.config.x402, ...options.settings },
    rateLimits: options.rateLimits ?? core.rateLimits,
    log: legacySink(core.logger, 'error'),
    note: (fields, message) => core.logger.info({ event: 'x402', ...fields }, message),
    async service(name) {
      const agent = core.mirror.get(name) ?? (await core.registry.getAgent(name).catch(() => null));
      return agent ? { owner: agent.owner, pricePerCall: agent.pricePerCall } : null;
    },
    ...(options.now ? { now: options.now } : {}),
  });
}
