import { describe, expect, it } from 'vitest';
import {
  buildPaymentRequired,
  decodePaymentResponse,
  encodePaymentHeader,
  encodePaymentResponse,
  encodeStrKey,
  parsePaymentHeader,
  parsePaymentRequired,
} from '../src/index.js';

const escrowId = encodeStrKey('contract', new Uint8Array(32).fill(7));
const payTo = encodeStrKey('publicKey', new Uint8Array(32).fill(9));

const quote = {
  resource: 'https://echo.example/',
  description: 'Echoes the payload',
  amount: 100_000n,
  payTo,
  network: 'stellar:testnet' as const,
  asset: 'USDC:GBBD47IF6LWK7P7MDEVSCWR7DPUWV3NY3DTQEVFL4NAT4AQH3ZLLFLA5',
  extra: { service: 'echo', quoteId: 'q_1' },
};

describe('buildPaymentRequired', () => {
  it('gives an x402 v1 body with one escrow requirement in base units', () => {
    const { body } = buildPaymentRequired(quote);
    expect(body).toEqual({
      x402Version: 1,
      error: 'payment required',
      accepts: [
        {
          scheme: 'escrow',
          network: 'stellar:testnet',
          maxAmountRequired: '100000',
          asset: quote.asset,
          payTo,
          resource: 'https://echo.example/',
          description: 'Echoes the payload',
          maxTimeoutSeconds: 300,
          mimeType: 'application/json',
          extra: { service: 'echo', quoteId: 'q_1' },
        },
      ],
    });
  });

  it('adds the v2 PAYMENT-REQUIRED header as padded standard base64 JSON', () => {
    const { headers } = buildPaymentRequired(quote);
    const decoded = JSON.parse(Buffer.from(headers['payment-required']!, 'base64').toString('utf8'));
    expect(decoded).toMatchObject({ x402Version: 2, resource: { url: 'https://echo.example/' }, accepts: [{ scheme: 'escrow', amount: '100000', payTo }] });
    expect(headers['payment-required']!.length % 4).toBe(0);
  });

  it('refuses a zero quote', () => {
    expect(() => buildPaymentRequired({ ...quote, amount: 0n })).toThrow('positive');
  });

  it('offers nothing when escrow is off: accepts is empty in both forms and the price stays readable at the top level', () => {
    const extra = { service: 'echo', priceBaseUnits: '100000', payments: ['platform'] };
    const { body, headers } = buildPaymentRequired({
      ...quote,
      extra,
      escrow: false,
      error: 'echo takes no direct payment: it is paid through the gateway only',
    });
    expect(body).toEqual({ x402Version: 1, error: 'echo takes no direct payment: it is paid through the gateway only', accepts: [], extra });
    const decoded = JSON.parse(Buffer.from(headers['payment-required']!, 'base64').toString('utf8'));
    expect(decoded).toMatchObject({ x402Version: 2, accepts: [], extra });
    for (const parsed of [parsePaymentRequired({ headers, body }), parsePaymentRequired({ body })]) {
      expect(parsed).toMatchObject({ accepts: [], extra, price: 100_000n, error: 'echo takes no direct payment: it is paid through the gateway only' });
    }
  });
});

describe('parsePaymentRequired', () => {
  it('prefers the v2 header and reads the same amount the v1 body carries', () => {
    const { body, headers } = buildPaymentRequired(quote);
    const v2 = parsePaymentRequired({ headers, body });
    const v1 = parsePaymentRequired({ body });
    expect(v2.version).toBe(2);
    expect(v1.version).toBe(1);
    expect(v2.accepts[0]!.amount).toBe(100_000n);
    expect(v1.accepts[0]!.amount).toBe(100_000n);
    expect(v2.accepts[0]!.payTo).toBe(v1.accepts[0]!.payTo);
    expect([v2.price, v1.price]).toEqual([100_000n, 100_000n]);
  });

  it('throws on a body that is not a quote', () => {
    expect(() => parsePaymentRequired({ body: { error: 'nope' } })).toThrow('not an x402');
  });
});

describe('parsePaymentHeader', () => {
  it('accepts a bare escrow id', () => {
    expect(parsePaymentHeader(escrowId)).toEqual({ version: 0, scheme: 'escrow', escrowId });
  });

  it('accepts v1 and v2 envelopes made by encodePaymentHeader', () => {
    expect(parsePaymentHeader(encodePaymentHeader({ escrowId, network: 'stellar:local', quoteId: 'q_9' }))).toEqual({
      version: 1,
      scheme: 'escrow',
      network: 'stellar:local',
      escrowId,
      quoteId: 'q_9',
    });
    expect(parsePaymentHeader(encodePaymentHeader({ escrowId, network: 'stellar:pubnet' }, 2))).toEqual({
      version: 2,
      scheme: 'escrow',
      network: 'stellar:pubnet',
      escrowId,
    });
  });

  it.each([
    ['an empty value', '', 'payment header is empty'],
    ['random text', 'hello', 'neither an escrow id nor an x402 envelope'],
    [
      'another scheme',
      Buffer.from(JSON.stringify({ x402Version: 1, scheme: 'exact', network: 'stellar:testnet', payload: {} })).toString('base64'),
      'unsupported payment scheme "exact"',
    ],
    [
      'an envelope without an escrow id',
      Buffer.from(JSON.stringify({ x402Version: 1, scheme: 'escrow', payload: { escrowId: 'GABC' } })).toString('base64'),
      'no valid escrow id',
    ],
    ['a G... account instead of a C... contract', payTo, 'neither an escrow id nor an x402 envelope'],
  ])('refuses %s', (_label, value, message) => {
    expect(() => parsePaymentHeader(value)).toThrow(message);
  });
});

describe('payment response', () => {
  it('round-trips', () => {
    const r = { success: true, transaction: 'ab'.repeat(32), network: 'stellar:testnet' as const, payer: payTo };
    expect(decodePaymentResponse(encodePaymentResponse(r))).toEqual(r);
  });
});
