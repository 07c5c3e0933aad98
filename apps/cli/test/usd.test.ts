import { expect, it } from 'vitest';
import { usd } from '../src/format.js';

it('shows balances and costs as exactly as the ledger keeps them, with at least the cents', () => {
  expect(usd(5)).toBe('$5.00');
  // Four calls of 0.001 from the 5 USD sign-up credit: not rounded back up to $5.00.
  expect(usd(4.996)).toBe('$4.996');
  expect(usd(0.25)).toBe('$0.25');
  expect(usd(0.0000123)).toBe('$0.0000123');
  expect(usd(12.3456789)).toBe('$12.3456789');
  expect(usd(0)).toBe('$0.00');
  expect(usd(undefined)).toBe('');
});
