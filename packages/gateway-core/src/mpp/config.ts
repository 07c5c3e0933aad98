import { randomBytes } from 'node:crypto';
import { ConfigError, parseAmount } from '@farebox/protocol';
import { parseDuration } from '../settlement/config.js';
import { LOCAL_CHANNEL_WASM_HASH } from '@farebox/stellar';

/** MPP channel sessions' settings (docs/operations.md, "MPP channel sessions"). */
export interface MppSettings {
  /** Channel calls are taken (`POST /v1/call` with `Authorization: Payment`). */
  enabled: boolean;
  /** The challenges' HMAC secret (`FAREBOX_MPP_SECRET`, at least 32 bytes; a random one per process on the local network). */
  secret: string;
  /** The Wasm hashes (hex) of the one-way channel contract accepted (`FAREBOX_MPP_CHANNEL_WASM_HASHES`, comma separated). */
  channelWasmHashes: string[];
  /** The fewest ledgers between a funder's close_start and its refund (`FAREBOX_MPP_MIN_REFUND_WAITING_PERIOD`, default 120, about 10 minutes). */
  minRefundWaitingPeriod: number;
  /** A channel with no paid call for this long is closed by the watcher (`FAREBOX_MPP_IDLE_CLOSE`, default 1 h). */
  idleCloseMs: number;
  /** An open channel is settled once this much (base units) is paid and not withdrawn (`FAREBOX_MPP_SETTLE_MIN`, default 1 USDC). */
  settleMin: bigint;
}

export interface MppConfigOptions {
  secret?: string;
  channelWasmHashes?: string | string[];
  minRefundWaitingPeriod?: string | number;
  /** `10s`, `5m`, `1h`; a bare number is seconds. */
  idleClose?: string | number;
  /** Decimal USDC (`1`, `0.25`). */
  settleMin?: string;
}

/**
 * Validates the MPP settings. On testnet and mainnet channel sessions are on only with a secret and at least one
 * channel code hash (a channel running other code could take vouchers and never pay); on the local network they are
 * on with the devnet's built-in channel and a random secret.
 */
export function resolveMppConfig(options: MppConfigOptions, network: 'local' | 'testnet' | 'mainnet'): MppSettings {
  const problems: string[] = [];
  const secret = options.secret || undefined;
  if (secret !== undefined && Buffer.byteLength(secret, 'utf8') < 32) problems.push('FAREBOX_MPP_SECRET must have at least 32 bytes');
  const hashes = (typeof options.channelWasmHashes === 'string' ? options.channelWasmHashes.split(',') : (options.channelWasmHashes ?? []))
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
  for (const h of hashes) if (!/^[0-9a-f]{64}$/.test(h)) problems.push(`FAREBOX_MPP_CHANNEL_WASM_HASHES: ${h} is not a 32-byte hex hash`);
  let min = 120;
  if (options.minRefundWaitingPeriod !== undefined && options.minRefundWaitingPeriod !== '') {
    min = Number(options.minRefundWaitingPeriod);
    if (!Number.isInteger(min) || min < 1 || min > 10_000_000) problems.push('FAREBOX_MPP_MIN_REFUND_WAITING_PERIOD must be a whole number of ledgers from 1');
  }
  const idleCloseMs =
    options.idleClose === undefined || options.idleClose === '' ? 3_600_000 : parseDuration(options.idleClose, 'FAREBOX_MPP_IDLE_CLOSE', problems);
  let settleMin = 10_000_000n;
  if (options.settleMin !== undefined && options.settleMin !== '') {
    try {
      settleMin = parseAmount(options.settleMin);
      if (settleMin < 1n) problems.push('FAREBOX_MPP_SETTLE_MIN must be above 0');
    } catch {
      problems.push('FAREBOX_MPP_SETTLE_MIN must be a decimal USDC amount such as 1 or 0.25');
    }
  }
  if (problems.length || idleCloseMs === undefined) throw new ConfigError(problems);
  const local = network === 'local';
  return {
    enabled: local || (secret !== undefined && hashes.length > 0),
    secret: secret ?? randomBytes(32).toString('base64url'),
    // The local network's channels run the devnet's channel contract.
    channelWasmHashes: local && hashes.length === 0 ? [LOCAL_CHANNEL_WASM_HASH] : hashes,
    minRefundWaitingPeriod: local && options.minRefundWaitingPeriod === undefined ? 10 : min,
    idleCloseMs,
    settleMin,
  };
}
