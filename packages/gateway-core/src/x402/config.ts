import { Keypair } from '@stellar/stellar-sdk';
import { ConfigError } from '@farebox/protocol';
import { parseDuration } from '../settlement/config.js';
import type { RateLimitRule } from '../security/rate-limit.js';

/** The platform facilitator's settings, validated once with the gateway's (docs/operations.md, "The x402 facilitator"). */
export interface X402Settings {
  /** Serve `POST /x402/verify` and `POST /x402/settle` (`FAREBOX_X402_FACILITATOR`; default on, except on mainnet). */
  enabled: boolean;
  /**
   * A dedicated account that pays the sponsored network fees through fee-bump transactions
   * (`FAREBOX_X402_FEE_ACCOUNT_SECRET`, an `S...` secret); without one the treasury pays them.
   */
  feeAccountSecret: string | undefined;
  /** The most one settlement's network fee may be, in stroops (`FAREBOX_X402_MAX_FEE_STROOPS`, default 50,000). */
  maxFeeStroops: bigint;
  /** Sponsored network fees per payer per UTC day, in stroops (`FAREBOX_X402_PAYER_DAILY_FEE_STROOPS`, default 1,000,000 = 0.1 XLM). */
  payerDailyFeeStroops: bigint;
  /** Sponsored network fees for all payers together per UTC day (`FAREBOX_X402_DAILY_FEE_STROOPS`, default 100,000,000 = 10 XLM). */
  dailyFeeStroops: bigint;
  /**
   * The part of the daily total that payers with no settled payment yet may hold, and that failed settles use up
   * (`FAREBOX_X402_NEW_PAYER_DAILY_FEE_STROOPS`, default a tenth of the total, at most 10,000,000 = 1 XLM; below the total).
   */
  newPayerDailyFeeStroops: bigint;
  /** The same per service (`FAREBOX_X402_SERVICE_NEW_PAYER_DAILY_FEE_STROOPS`, default a tenth of the above, at most 1,000,000 = 0.1 XLM). */
  serviceNewPayerDailyFeeStroops: bigint;
  /** Verify and settle requests per IP (`FAREBOX_X402_IP_RATE_LIMIT`, default 600 a minute) and per payer (`FAREBOX_X402_PAYER_RATE_LIMIT`, default 60). */
  rateLimits: { ip: RateLimitRule; payer: RateLimitRule };
  /** Channel accounts settlements are sent from, one settlement per channel at a time (`FAREBOX_X402_CHANNELS`, default 8, at most 64). */
  channels: number;
  /** XLM (stroops) the treasury gives each channel account for fees, again when it falls below half (`FAREBOX_X402_CHANNEL_STROOPS`, default 20,000,000 = 2 XLM). */
  channelStroops: bigint;
  /** Settlements of one payer in flight at once (`FAREBOX_X402_PAYER_CONCURRENCY`, default 2); more wait for their turn. */
  payerConcurrency: number;
  /**
   * How long after its settlement an `exact` payment may be refunded (`POST /x402/refund`), and how long the earning of
   * a settle-first payment (`extra.refundable: true`) is held back from settlement batches (`FAREBOX_X402_REFUND_WINDOW`,
   * default 10 minutes, at most 24 hours).
   */
  refundWindowMs: number;
}

/** The facilitator's settings as the host passes them (the gateway host reads the variables named above). */
export interface X402ConfigOptions {
  facilitator?: boolean;
  feeAccountSecret?: string;
  maxFeeStroops?: string | number;
  payerDailyFeeStroops?: string | number;
  dailyFeeStroops?: string | number;
  newPayerDailyFeeStroops?: string | number;
  serviceNewPayerDailyFeeStroops?: string | number;
  ipPerMinute?: string | number;
  payerPerMinute?: string | number;
  channels?: string | number;
  channelStroops?: string | number;
  payerConcurrency?: string | number;
  /** `500ms`, `10s`, `5m`, `1h`; a bare number is seconds. */
  refundWindow?: string | number;
}

function stroops(value: string | number | undefined, name: string, fallback: bigint, problems: string[]): bigint {
  if (value === undefined || value === '') return fallback;
  const text = String(value).trim();
  if (!/^\d{1,15}$/.test(text) || BigInt(text) < 1n) {
    problems.push(`${name} must be a whole number of stroops >= 1`);
    return fallback;
  }
  return BigInt(text);
}

function positiveInt(value: string | number | undefined, name: string, fallback: number, problems: string[], max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max) {
    problems.push(max === Number.MAX_SAFE_INTEGER ? `${name} must be an integer >= 1` : `${name} must be an integer from 1 to ${max}`);
    return fallback;
  }
  return n;
}

/** A channel account's base reserve (1 XLM) and room for fees: less would leave it unable to pay one. */
const MIN_CHANNEL_STROOPS = 15_000_000n;

/** Validates the facilitator's settings (every problem reported together, `ConfigError`). */
export function resolveX402Config(options: X402ConfigOptions, network: 'local' | 'testnet' | 'mainnet'): X402Settings {
  const problems: string[] = [];
  const feeAccountSecret = options.feeAccountSecret || undefined;
  if (feeAccountSecret !== undefined) {
    try {
      Keypair.fromSecret(feeAccountSecret);
    } catch {
      problems.push('FAREBOX_X402_FEE_ACCOUNT_SECRET must be an S... secret seed');
    }
  }
  const maxFeeStroops = stroops(options.maxFeeStroops, 'FAREBOX_X402_MAX_FEE_STROOPS', 50_000n, problems);
  const payerDailyFeeStroops = stroops(options.payerDailyFeeStroops, 'FAREBOX_X402_PAYER_DAILY_FEE_STROOPS', 1_000_000n, problems);
  const dailyFeeStroops = stroops(options.dailyFeeStroops, 'FAREBOX_X402_DAILY_FEE_STROOPS', 100_000_000n, problems);
  if (payerDailyFeeStroops > dailyFeeStroops) problems.push('FAREBOX_X402_PAYER_DAILY_FEE_STROOPS must not exceed FAREBOX_X402_DAILY_FEE_STROOPS');
  const tenth = (n: bigint, most: bigint) => (n / 10n > 0n ? (n / 10n < most ? n / 10n : most) : 1n);
  const newPayerDailyFeeStroops = stroops(
    options.newPayerDailyFeeStroops,
    'FAREBOX_X402_NEW_PAYER_DAILY_FEE_STROOPS',
    tenth(dailyFeeStroops, 10_000_000n),
    problems,
  );
  const serviceNewPayerDailyFeeStroops = stroops(
    options.serviceNewPayerDailyFeeStroops,
    'FAREBOX_X402_SERVICE_NEW_PAYER_DAILY_FEE_STROOPS',
    tenth(newPayerDailyFeeStroops, 1_000_000n),
    problems,
  );
  // Below the total: whatever newcomers and failed settles spend, payers with a settled payment keep the rest.
  if (newPayerDailyFeeStroops >= dailyFeeStroops)
    problems.push('FAREBOX_X402_NEW_PAYER_DAILY_FEE_STROOPS must be below FAREBOX_X402_DAILY_FEE_STROOPS (payers with a settled payment keep the rest)');
  if (serviceNewPayerDailyFeeStroops > newPayerDailyFeeStroops)
    problems.push('FAREBOX_X402_SERVICE_NEW_PAYER_DAILY_FEE_STROOPS must not exceed FAREBOX_X402_NEW_PAYER_DAILY_FEE_STROOPS');
  const ip = positiveInt(options.ipPerMinute, 'FAREBOX_X402_IP_RATE_LIMIT', 600, problems);
  const payer = positiveInt(options.payerPerMinute, 'FAREBOX_X402_PAYER_RATE_LIMIT', 60, problems);
  const channels = positiveInt(options.channels, 'FAREBOX_X402_CHANNELS', 8, problems, 64);
  const channelStroops = stroops(options.channelStroops, 'FAREBOX_X402_CHANNEL_STROOPS', 20_000_000n, problems);
  if (channelStroops < MIN_CHANNEL_STROOPS) problems.push(`FAREBOX_X402_CHANNEL_STROOPS must be at least ${MIN_CHANNEL_STROOPS} (1 XLM of reserve and fees)`);
  const payerConcurrency = positiveInt(options.payerConcurrency, 'FAREBOX_X402_PAYER_CONCURRENCY', 2, problems, 64);
  const refundWindowMs =
    options.refundWindow === undefined || options.refundWindow === ''
      ? 600_000
      : (parseDuration(options.refundWindow, 'FAREBOX_X402_REFUND_WINDOW', problems) ?? 600_000);
  if (refundWindowMs > 86_400_000) problems.push('FAREBOX_X402_REFUND_WINDOW must be at most 24h');
  if (problems.length) throw new ConfigError(problems);
  return {
    // Where money is real the operator turns it on (docs/operations.md): the bounds above hold either way.
    enabled: options.facilitator ?? network !== 'mainnet',
    feeAccountSecret,
    maxFeeStroops,
    payerDailyFeeStroops,
    dailyFeeStroops,
    newPayerDailyFeeStroops,
    serviceNewPayerDailyFeeStroops,
    rateLimits: {
      ip: { name: 'x402-ip', limit: ip, windowMs: 60_000 },
      payer: { name: 'x402-payer', limit: payer, windowMs: 60_000 },
    },
    channels,
    channelStroops,
    payerConcurrency,
    refundWindowMs,
  };
}
