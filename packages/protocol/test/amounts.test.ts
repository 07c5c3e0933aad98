import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { amountFields, formatAmount, parseAmount, parseBaseUnits, splitFee, MAX_BASE_UNITS } from '../src/index.js';

describe('parseAmount', () => {
  it('turns decimal strings and numbers into base units', () => {
    expect(parseAmount('1')).toBe(10_000_000n);
    expect(parseAmount('0.0000001')).toBe(1n);
    expect(parseAmount('1.25')).toBe(12_500_000n);
    expect(parseAmount(1000)).toBe(10_000_000_000n);
    expect(parseAmount(0.1)).toBe(1_000_000n);
    expect(parseAmount(1e-7)).toBe(1n);
    expect(parseAmount('  2.5  ')).toBe(25_000_000n);
    expect(parseAmount('3.')).toBe(30_000_000n);
  });

  it.each([
    ['NaN', Number.NaN, 'amount is NaN'],
    ['Infinity', Number.POSITIVE_INFINITY, 'amount is not a finite number'],
    ['a negative number', -1, 'amount must not be negative'],
    ['a negative string', '-0.5', 'amount must not be negative'],
    ['8 decimals', '0.00000001', 'amount has more than 7 decimals'],
    ['8 decimals as a number', 1.00000001, 'amount has more than 7 decimals'],
    ['hex', '0x10', 'amount is not a decimal number'],
    ['exponent text', '1e5', 'amount is not a decimal number'],
    ['empty', '', 'amount is not a decimal number'],
    ['overflow', '922337203685.4775808', 'amount is too large'],
  ])('rejects %s', (_label, input, message) => {
    expect(() => parseAmount(input as string | number)).toThrow(message);
  });

  it('accepts the largest int64 amount exactly', () => {
    expect(parseAmount('922337203685.4775807')).toBe(MAX_BASE_UNITS);
  });

  it('round-trips every base-unit amount through formatAmount', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: MAX_BASE_UNITS }), (units) => {
        expect(parseAmount(formatAmount(units))).toBe(units);
        expect(parseAmount(formatAmount(units, { trim: true }))).toBe(units);
      }),
    );
  });
});

describe('formatAmount', () => {
  it('prints 7 decimals as Stellar classic amounts do', () => {
    expect(formatAmount(12_500_000n)).toBe('1.2500000');
    expect(formatAmount(1n)).toBe('0.0000001');
    expect(formatAmount(50_000_000n, { trim: true })).toBe('5');
  });
});

describe('parseBaseUnits', () => {
  it('accepts integers and digit strings, refuses fractions and negatives', () => {
    expect(parseBaseUnits(12)).toBe(12n);
    expect(parseBaseUnits('9000000')).toBe(9_000_000n);
    expect(() => parseBaseUnits(1.5)).toThrow('base units must be an integer');
    expect(() => parseBaseUnits(-3)).toThrow('amount must not be negative');
    expect(() => parseBaseUnits('12.0')).toThrow('base units must be an integer');
  });
});

describe('amountFields', () => {
  it('adds the legacy *_lamports and *_sol twins, both in base units (the spec, Versioning rule 2)', () => {
    expect(amountFields('wallet', 12_500_000n)).toEqual({
      wallet_base_units: 12_500_000,
      wallet_lamports: 12_500_000,
      wallet_asset_amount: 1.25,
      wallet_sol: 12_500_000,
      wallet_usd: 1.25,
    });
  });
});

describe('splitFee', () => {
  it('takes 5 percent, rounded down, and gives the rest to the publisher', () => {
    expect(splitFee(10_000_000n)).toEqual({ amount: 10_000_000n, fee: 500_000n, net: 9_500_000n });
    expect(splitFee(19n)).toEqual({ amount: 19n, fee: 0n, net: 19n });
    expect(splitFee(20n)).toEqual({ amount: 20n, fee: 1n, net: 19n });
    expect(splitFee(0n)).toEqual({ amount: 0n, fee: 0n, net: 0n });
  });

  it('keeps fee + net === amount, and fee = floor(5% of amount), for every amount', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: MAX_BASE_UNITS }), (amount) => {
        const { fee, net } = splitFee(amount);
        expect(fee + net).toBe(amount);
        expect(fee * 20n <= amount).toBe(true);
        expect((fee + 1n) * 20n > amount).toBe(true);
        expect(net >= 0n).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('splitting a batch never gives the platform more than the sum of per-call fees would', () => {
    fc.assert(
      fc.property(fc.array(fc.bigInt({ min: 1n, max: 10_000_000_000n }), { minLength: 1, maxLength: 50 }), (calls) => {
        const total = calls.reduce((a, b) => a + b, 0n);
        const perCall = calls.reduce((a, c) => a + splitFee(c).fee, 0n);
        expect(splitFee(total).fee >= perCall).toBe(true);
        expect(splitFee(total).fee - perCall < BigInt(calls.length)).toBe(true);
      }),
    );
  });
});
