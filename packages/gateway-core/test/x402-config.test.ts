import { Keypair } from '@stellar/stellar-sdk';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '@farebox/protocol';
import { resolveGatewayConfig, type GatewayOptions } from '../src/config.js';

// The x402 facilitator's settings (docs/operations.md, "The x402 facilitator"): bounded by default everywhere,
// off on mainnet until the operator turns it on; bad values named with their variable, nothing started.

const KEY = { keystoreKey: 'a'.repeat(64) };
const MAINNET = {
  network: 'mainnet',
  databaseUrl: 'postgres://db/farebox',
  baseUrl: 'https://farebox.example',
  signupCredit: '0',
  ...KEY,
} as const;

function problems(options: GatewayOptions): string[] {
  try {
    resolveGatewayConfig(options);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('the x402 facilitator settings', () => {
  it('are on with bounded fees on local and testnet, off on mainnet unless turned on, with the same bounds', () => {
    const bounds = {
      feeAccountSecret: undefined,
      maxFeeStroops: 50_000n,
      payerDailyFeeStroops: 1_000_000n,
      dailyFeeStroops: 100_000_000n,
      // Payers with no settled payment (and failed settles) may spend a tenth of it, 0.1 XLM of it at one service.
      newPayerDailyFeeStroops: 10_000_000n,
      serviceNewPayerDailyFeeStroops: 1_000_000n,
      rateLimits: { ip: { name: 'x402-ip', limit: 600, windowMs: 60_000 }, payer: { name: 'x402-payer', limit: 60, windowMs: 60_000 } },
      // Settlements go out from 8 channel accounts of 2 XLM each, at most 2 of one payer at once.
      channels: 8,
      channelStroops: 20_000_000n,
      payerConcurrency: 2,
      // A payment may be refunded, and a settle-first payment's earning is held back from batches, for 10 minutes.
      refundWindowMs: 600_000,
    };
    expect(resolveGatewayConfig({ network: 'local' }).x402).toEqual({ enabled: true, ...bounds });
    expect(resolveGatewayConfig({ network: 'testnet', ...KEY }).x402).toEqual({ enabled: true, ...bounds });
    expect(resolveGatewayConfig(MAINNET).x402).toEqual({ enabled: false, ...bounds });
    expect(resolveGatewayConfig({ ...MAINNET, x402: { facilitator: true } }).x402).toEqual({ enabled: true, ...bounds });
    const secret = Keypair.random().secret();
    expect(
      resolveGatewayConfig({
        network: 'local',
        x402: {
          feeAccountSecret: secret,
          maxFeeStroops: '80000',
          payerDailyFeeStroops: 400_000,
          dailyFeeStroops: '9000000',
          ipPerMinute: 30,
          payerPerMinute: '5',
          channels: '16',
          channelStroops: 50_000_000,
          payerConcurrency: 1,
        },
      }).x402,
    ).toMatchObject({
      channels: 16,
      channelStroops: 50_000_000n,
      payerConcurrency: 1,
      feeAccountSecret: secret,
      maxFeeStroops: 80_000n,
      payerDailyFeeStroops: 400_000n,
      dailyFeeStroops: 9_000_000n,
      rateLimits: { ip: { limit: 30 }, payer: { limit: 5 } },
    });
  });

  it('refuse bad values together, each named by its variable', () => {
    expect(
      problems({
        network: 'local',
        x402: {
          feeAccountSecret: 'GNOTASECRET',
          maxFeeStroops: '0',
          payerDailyFeeStroops: '1.5',
          dailyFeeStroops: 'lots',
          ipPerMinute: 0,
          payerPerMinute: 'many',
        },
      }),
    ).toEqual([
      'FAREBOX_X402_FEE_ACCOUNT_SECRET must be an S... secret seed',
      'FAREBOX_X402_MAX_FEE_STROOPS must be a whole number of stroops >= 1',
      'FAREBOX_X402_PAYER_DAILY_FEE_STROOPS must be a whole number of stroops >= 1',
      'FAREBOX_X402_DAILY_FEE_STROOPS must be a whole number of stroops >= 1',
      'FAREBOX_X402_IP_RATE_LIMIT must be an integer >= 1',
      'FAREBOX_X402_PAYER_RATE_LIMIT must be an integer >= 1',
    ]);
    expect(problems({ network: 'local', x402: { payerDailyFeeStroops: '2000', dailyFeeStroops: '1000' } })).toEqual([
      'FAREBOX_X402_PAYER_DAILY_FEE_STROOPS must not exceed FAREBOX_X402_DAILY_FEE_STROOPS',
    ]);
    // The newcomers' part stays below the total, the part of one service within it.
    expect(
      problems({
        network: 'local',
        x402: { dailyFeeStroops: '1000', payerDailyFeeStroops: 500, newPayerDailyFeeStroops: 1000, serviceNewPayerDailyFeeStroops: '2000' },
      }),
    ).toEqual([
      'FAREBOX_X402_NEW_PAYER_DAILY_FEE_STROOPS must be below FAREBOX_X402_DAILY_FEE_STROOPS (payers with a settled payment keep the rest)',
      'FAREBOX_X402_SERVICE_NEW_PAYER_DAILY_FEE_STROOPS must not exceed FAREBOX_X402_NEW_PAYER_DAILY_FEE_STROOPS',
    ]);
    expect(resolveGatewayConfig({ network: 'local', x402: { dailyFeeStroops: '9000000' } }).x402).toMatchObject({
      newPayerDailyFeeStroops: 900_000n,
      serviceNewPayerDailyFeeStroops: 90_000n,
    });
    expect(problems({ network: 'local', x402: { channels: 0, channelStroops: '10000000', payerConcurrency: 'two' } })).toEqual([
      'FAREBOX_X402_CHANNELS must be an integer from 1 to 64',
      'FAREBOX_X402_CHANNEL_STROOPS must be at least 15000000 (1 XLM of reserve and fees)',
      'FAREBOX_X402_PAYER_CONCURRENCY must be an integer from 1 to 64',
    ]);
  });
});
