import type { Database, Ledger } from '@farebox/ledger';
import { createCycleLocks } from '../settlement/lock.js';
import { rpc } from '@stellar/stellar-sdk';
import { channelInvoke, readChannelState, type NetworkConfig, type TxSigner } from '@farebox/stellar';
import type { TreasuryQueue } from '../runtime/treasury-queue.js';
import { createChannelWatcher, type ChannelWatcher } from './watcher.js';
import type { GatewayConfig } from '../config.js';
import { createChannelCalls, type ChannelCalls, type ChannelCallsOptions } from './calls.js';
import { createChannelSessions, type ChannelSessions } from './sessions.js';

export { CHANNEL_HEADER, createChannelCalls } from './calls.js';
export type { ChannelCallAnswer, ChannelCalls, ChannelCallsOptions } from './calls.js';
export { createChannelSessions } from './sessions.js';
export type { AcceptedVoucher, ChannelSessions, ChannelSessionsOptions } from './sessions.js';
export { resolveMppConfig } from './config.js';
export { createChannelWatcher } from './watcher.js';
export type { ChannelAction, ChannelWatcher, ChannelWatcherOptions } from './watcher.js';
export type { MppConfigOptions, MppSettings } from './config.js';

/** The gateway's MPP parts: channel calls when config.mpp is on. */
export interface MppRuntime {
  sessions: ChannelSessions | undefined;
  calls: ChannelCalls | undefined;
  /** Settles and closes channels with the treasury (every 30 s once started; `tick()` runs one pass now). */
  watcher: ChannelWatcher | undefined;
  start(): void;
  stop(): void;
}

/** How often the watcher looks at the channels the ledger says are due. */
export const CHANNEL_WATCH_INTERVAL_MS = 30_000;

/** MPP channel sessions over the gateway's ledger, network and treasury (the channel read from the network's RPC). */
export function createMpp(deps: {
  config: GatewayConfig;
  network: NetworkConfig;
  ledger: Ledger;
  db: Database;
  treasury: TxSigner;
  treasuryQueue: TreasuryQueue;
  calls: ChannelCallsOptions['calls'];
  now: () => number;
  log: (message: string, err?: unknown) => void;
}): MppRuntime {
  const { config, network } = deps;
  if (!config.mpp.enabled) return { sessions: undefined, calls: undefined, watcher: undefined, start() {}, stop() {} };
  const server = new rpc.Server(network.rpcUrl, { allowHttp: network.allowHttp });
  const sessions = createChannelSessions({
    ledger: deps.ledger,
    network,
    treasury: deps.treasury.publicKey,
    secret: config.mpp.secret,
    realm: new URL(config.baseUrl).host,
    readChannel: (channel) => readChannelState(server, network, channel),
    channelWasmHashes: config.mpp.channelWasmHashes,
    minRefundWaitingPeriod: config.mpp.minRefundWaitingPeriod,
    // A voucher holds its channel while its call may still be answered.
    leaseMs: config.callTimeoutMs + 5_000,
    now: deps.now,
  });
  const watcher = createChannelWatcher({
    ledger: deps.ledger,
    readChannel: (channel) => readChannelState(server, network, channel),
    invoke: (channel, call) => channelInvoke(server, network, deps.treasury, channel, call),
    treasuryQueue: deps.treasuryQueue,
    idleCloseMs: config.mpp.idleCloseMs,
    settleMin: config.mpp.settleMin,
    now: deps.now,
    log: deps.log,
  });
  let timer: ReturnType<typeof setInterval> | undefined;
  let busy = false;
  // One gateway's watcher at a time on a database: two would send the same settle twice (the second moves nothing, but costs a fee).
  const locks = createCycleLocks(deps.db, deps.now);
  return {
    sessions,
    calls: createChannelCalls({ sessions, calls: deps.calls }),
    watcher,
    start() {
      timer ??= setInterval(() => {
        if (busy) return;
        busy = true;
        void locks
          .withLock('mpp-channel-watcher', () => watcher.tick())
          .catch((err) => deps.log('channel watcher failed', err))
          .finally(() => {
            busy = false;
          });
      }, CHANNEL_WATCH_INTERVAL_MS);
      timer.unref?.();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}
