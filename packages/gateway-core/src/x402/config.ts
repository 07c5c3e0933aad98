import { Keypair } from '@stellar/stellar-sdk';
import { ConfigError } from '@farebox/protocol';
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
  /** Verify and settle requests per IP (`FAREBOX_X402_IP_RATE_LIMIT`, default 600 a minute) and per payer (`FAREBOX_X402_PAYER_RATE_LIMIT`, default 60). */
  rateLimits: { ip: RateLimitRule; payer: RateLimitRule };
}

/** The facilitator's settings as the host passes them (the gateway host reads the variables named above). */
export interface X402ConfigOptions {
  facilitator?: boolean;
  feeAccountSecret?: string;
  maxFeeStroops?: string | number;
  payerDailyFeeStroops?: string | number;
  dailyFeeStroops?: string | number;
  ipPerMinute?: string | number;
  payerPerMinute?: string | number;
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

function perMinute(value: string | number | undefined, name: string, fallback: number, problems: string[]): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) {
    problems.push(`${name} must be an integer >= 1`);
    return fallback;
  }
  return n;
}

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
  const ip = perMinute(options.ipPerMinute, 'FAREBOX_X402_IP_RATE_LIMIT', 600, problems);
  const payer = perMinute(options.payerPerMinute, 'FAREBOX_X402_PAYER_RATE_LIMIT', 60, problems);
  if (problems.length) throw new ConfigError(problems);
  return {
    // Where money is real the operator turns it on (docs/operations.md): the bounds above hold either way.
    enabled: options.facilitator ?? network !== 'mainnet',
    feeAccountSecret,
    maxFeeStroops,
    payerDailyFeeStroops,
    dailyFeeStroops,
    rateLimits: {
      ip: { name: 'x402-ip', limit: ip, windowMs: 60_000 },
      payer: { name: 'x402-payer', limit: payer, windowMs: 60_000 },
    },
  };
}
