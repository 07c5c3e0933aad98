import type { Ledger } from '@farebox/ledger';
import { rpc } from '@stellar/stellar-sdk';
import { readChannelState, type NetworkConfig } from '@farebox/stellar';
import type { GatewayConfig } from '../config.js';
import { createChannelCalls, type ChannelCalls, type ChannelCallsOptions } from './calls.js';
import { createChannelSessions, type ChannelSessions } from './sessions.js';

export { CHANNEL_HEADER, createChannelCalls } from './calls.js';
export type { ChannelCallAnswer, ChannelCalls, ChannelCallsOptions } from './calls.js';
export { createChannelSessions } from './sessions.js';
export type { AcceptedVoucher, ChannelSessions, ChannelSessionsOptions } from './sessions.js';
export { resolveMppConfig } from './config.js';
export type { MppConfigOptions, MppSettings } from './config.js';

/** The gateway's MPP parts: channel calls when config.mpp is on. */
export interface MppRuntime {
  sessions: ChannelSessions | undefined;
  calls: ChannelCalls | undefined;
}

/** MPP channel sessions over the gateway's ledger, network and treasury (the channel read from the network's RPC). */
export function createMpp(deps: {
  config: GatewayConfig;
  network: NetworkConfig;
  ledger: Ledger;
  treasuryAddress: string;
  calls: ChannelCallsOptions['calls'];
  now: () => number;
}): MppRuntime {
  const { config, network } = deps;
  if (!config.mpp.enabled) return { sessions: undefined, calls: undefined };
  const server = new rpc.Server(network.rpcUrl, { allowHttp: network.allowHttp });
  const sessions = createChannelSessions({
    ledger: deps.ledger,
    network,
    treasury: deps.treasuryAddress,
    secret: config.mpp.secret,
    realm: new URL(config.baseUrl).host,
    readChannel: (channel) => readChannelState(server, network, channel),
    channelWasmHashes: config.mpp.channelWasmHashes,
    minRefundWaitingPeriod: config.mpp.minRefundWaitingPeriod,
    // A voucher holds its channel while its call may still be answered.
    leaseMs: config.callTimeoutMs + 5_000,
    now: deps.now,
  });
  return { sessions, calls: createChannelCalls({ sessions, calls: deps.calls }) };
}
