import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { expect, it } from 'vitest';
import { CALL_STEPS, refundedToCredits } from '../src/calls.js';
import { WALLET_STEPS } from '../src/wallet-path.js';

const apiDoc = readFileSync(resolve(import.meta.dirname, '../../../docs/api.md'), 'utf8');

it("docs/api.md names exactly the trace steps the code records, the credit path's and the wallet path's", () => {
  // The paragraph that lists them: from "Step names" to the next blank line.
  const start = apiDoc.indexOf('Step names');
  expect(start).toBeGreaterThan(-1);
  const paragraph = apiDoc.slice(start, apiDoc.indexOf('\n\n', start));
  const named = [...paragraph.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!);
  expect(named).toEqual([...CALL_STEPS, ...WALLET_STEPS]);
  expect(WALLET_STEPS).toEqual([
    'wallet_path',
    'wallet_quote',
    'wallet_deploy',
    'wallet_fund',
    'wallet_call',
    'wallet_settled',
    'wallet_refund',
    'wallet_topup',
  ]);
});

it('says the exact amount that went back to credits, and nothing for a call that cost nothing', () => {
  expect(refundedToCredits(10_000n)).toBe('; the 0.001 USD charge was refunded to your credits');
  expect(refundedToCredits(12_345_678n)).toBe('; the 1.2345678 USD charge was refunded to your credits');
  expect(refundedToCredits(0n)).toBe('');
});
