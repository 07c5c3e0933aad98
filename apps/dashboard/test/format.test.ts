import { describe, expect, it } from 'vitest';
import { checkTopup, describeDetail, formatBaseUnits, formatUsd, parsePayload, parseUsdc, plural } from '../app/format.js';

describe('amounts shown in the dashboard', () => {
  it('shows USD with up to 7 decimals, trailing zeros trimmed but at least cents', () => {
    expect(formatBaseUnits(50_000_000)).toBe('$5.00');
    expect(formatBaseUnits(475_000)).toBe('$0.0475');
    expect(formatBaseUnits(1)).toBe('$0.0000001');
    expect(formatBaseUnits('123456789012345')).toBe('$12,345,678.9012345');
    expect(formatBaseUnits(-100_000)).toBe('-$0.01');
    expect(formatUsd(0.285)).toBe('$0.285');
    expect(formatUsd(17.44)).toBe('$17.44');
  });

  it('turns a USDC price typed by a publisher into exact base units, refusing more than 7 decimals', () => {
    expect(parseUsdc('0.05')).toEqual({ units: 500_000n });
    expect(parseUsdc(' 1 ')).toEqual({ units: 10_000_000n });
    expect(parseUsdc('0.0000001')).toEqual({ units: 1n });
    expect(parseUsdc('0.123456789')).toEqual({ error: 'at most 7 decimals (1 USDC = 10,000,000 base units)' });
    expect(parseUsdc('0')).toEqual({ error: 'the price must be more than 0' });
    expect(parseUsdc('-1')).toEqual({ error: 'enter an amount in USDC, like 0.01' });
    expect(parseUsdc('1e3')).toEqual({ error: 'enter an amount in USDC, like 0.01' });
  });

  it('checks a top-up with the gateway messages: 0 < n <= 1000 and credits capped at 10,000', () => {
    expect(checkTopup('25', 5)).toEqual({ amount: 25 });
    expect(checkTopup('1000', 0)).toEqual({ amount: 1000 });
    for (const bad of ['0', '-5', '1000.01', '', 'abc']) expect(checkTopup(bad, 5)).toEqual({ error: 'invalid amount (must be 0 < n <= 1000)' });
    expect(checkTopup('1000', 9_500)).toEqual({ error: 'balance cap exceeded (max $10000)' });
    expect(checkTopup('500', 9_500)).toEqual({ amount: 500 });
  });

  it('accepts only a JSON object as the try-it payload and says what is wrong otherwise', () => {
    expect(parsePayload('{"text":"hi"}')).toEqual({ payload: { text: 'hi' } });
    expect(parsePayload('  ')).toEqual({ payload: {} });
    expect(parsePayload('[1]')).toEqual({ error: 'the payload must be a JSON object, like {"text": "hello"}' });
    expect((parsePayload('{"a":') as { error: string }).error).toMatch(/^the payload is not valid JSON/);
  });

  it('writes counts and trace details for people', () => {
    expect(plural(1, 'call')).toBe('1 call');
    expect(plural(1200, 'call')).toBe('1,200 calls');
    expect(describeDetail({ amount: '100000', payee: 'GCJGN2C2IXMZNR5Q45B7PK3Q2HGA45UB6LT4IVV4PTVBVSE6OPHYFGBM', endpoint: 'http://x/' })).toBe(
      'amount $0.01 · payee GCJGN2…HYFGBM · endpoint http://x/',
    );
  });
});
