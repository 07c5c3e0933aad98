import { walletSigner } from '@farebox/wallets';
import type { GatewayCore } from '../gateway-types.js';
import { legacySink, type Logger } from '../observability/log.js';
import type { Metrics } from '../observability/metrics.js';
import type { RateLimitStore } from '../security/rate-limit.js';
import type { ChannelPool } from './channels.js';
import type { X402Settings } from './config.js';
import { createFacilitator, type Facilitator } from './facilitator.js';
import { createExactReconciler, type ExactReconciler, type ExactReconcilerOptions } from './reconcile.js';
import { createExactRefunds, type ExactRefunds } from './refund.js';
import type { TreasuryQueue } from '../runtime/treasury-queue.js';
import type { TxSigner } from '@farebox/stellar';

export { createChannelPool } from './channels.js';
export type { ChannelLease, ChannelPool, ChannelPoolOptions } from './channels.js';
export { createFacilitator } from './facilitator.js';
export { MuxedExactStellarScheme } from '@farebox/provider';
export type { CreateFacilitatorOptions, Facilitator, FacilitatorAnswer } from './facilitator.js';
export { resolveX402Config } from './config.js';
export type { X402ConfigOptions, X402Settings } from './config.js';
export { createExactReconciler, EXACT_RECONCILE_GRACE_MS, EXACT_RECONCILE_INTERVAL_MS } from './reconcile.js';
export type { ExactReconciler, ExactReconcilerOptions, IntentResolution } from './reconcile.js';
export { readSettledTransfer } from './transfer.js';
export { createExactRefunds, EXACT_REFUND_GRACE_MS, EXACT_REFUND_WINDOW_MS, refundMemo } from './refund.js';
export type { ExactRefunds, ExactRefundsOptions } from './refund.js';
export type { SettledTransfer } from './transfer.js';

/**
 * The gateway's own facilitator (`/x402/*`): the treasury from its keystore,
 * the gateway's channel accounts (shared by every facilitator built on it),
 * the catalog mirror (the registry when the mirror has not seen a service
 * yet), its ledger, rate-limit store and `config.x402` settings (`settings`
 * and `rateLimits` replace them, e.g. for a second facilitator in a test;
 * `crashPoint` replaces the gateway's crash tests' hook).
 */
export function gatewayFacilitator(
  core: GatewayCore,
  options: { now?: () => number; settings?: Partial<X402Settings>; rateLimits?: RateLimitStore; crashPoint?: (name: string) => void } = {},
): Facilitator {
  return createFacilitator({
    ledger: core.ledger,
    network: core.network,
    treasury: walletSigner(core.wallets, core.treasuryAddress),
    channels: core.x402.channels,
    settings: { ...core.config.x402, ...options.settings },
    rateLimits: options.rateLimits ?? core.rateLimits,
    log: legacySink(core.logger, 'error'),
    ...((options.crashPoint ?? core.x402.crashPoint) ? { crashPoint: options.crashPoint ?? core.x402.crashPoint } : {}),
    note: (fields, message) => core.logger.info({ event: 'x402', ...fields }, message),
    async service(name) {
      const agent = core.mirror.get(name) ?? (await core.registry.getAgent(name).catch(() => null));
      return agent ? { owner: agent.owner, pricePerCall: agent.pricePerCall } : null;
    },
    ...(options.now ? { now: options.now } : {}),
  });
}

/** The gateway's x402 parts that outlive a request: the reconciler of interrupted settlements and the crash tests' hook. */
export interface X402Runtime {
  /** Resolves settlement intents left pending (every gateway runs it at start and every minute). */
  readonly reconciler: ExactReconciler;
  /** The crash tests' hook (`x402:settled`), passed to the facilitators built on this gateway. */
  readonly crashPoint: ((name: string) => void) | undefined;
  /** The channel accounts every facilitator of this gateway sends its settlements from (x402/channels.ts). */
  readonly channels: ChannelPool;
  /** Refunds of exact payments (`POST /x402/refund`) and their reconciler (x402/refund.ts). */
  readonly refunds: ExactRefunds;
}

/** Builds the gateway's {@link X402Runtime}: one warn line (`event: "x402-reconcile"`) and one count per resolution. */
export function createX402Runtime(o: {
  ledger: ExactReconcilerOptions['ledger'];
  network: ExactReconcilerOptions['network'];
  channels: ChannelPool;
  logger: Logger;
  metrics: Metrics;
  log: (message: string, err?: unknown) => void;
  crashPoint?: ((name: string) => void) | undefined;
  now?: () => number;
  /** For refunds: the treasury, its queue, the facilitator's settings and the rate-limit store. */
  treasury: TxSigner;
  treasuryQueue: TreasuryQueue;
  settings: X402Settings;
  rateLimits: RateLimitStore;
}): X402Runtime {
  return {
    refunds: createExactRefunds({
      ledger: o.ledger as import('@farebox/ledger').Ledger,
      network: o.network as import('@farebox/stellar').NetworkConfig,
      treasury: o.treasury,
      treasuryQueue: o.treasuryQueue,
      settings: o.settings,
      rateLimits: o.rateLimits,
      note: (fields, message) => o.logger.warn({ event: 'x402-refund', ...fields }, message),
      log: o.log,
      ...(o.crashPoint ? { crashPoint: o.crashPoint } : {}),
      ...(o.now ? { now: o.now } : {}),
    }),
    crashPoint: o.crashPoint,
    channels: o.channels,
    reconciler: createExactReconciler({
      ledger: o.ledger,
      network: o.network,
      note: (fields, message) => o.logger.warn({ event: 'x402-reconcile', ...fields }, message),
      count: (result) => o.metrics.x402Reconciled.inc({ result }),
      log: o.log,
      ...(o.now ? { now: o.now } : {}),
    }),
  };
}
