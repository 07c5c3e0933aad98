import { describe, expect, it } from 'vitest';
import {
  EXACT_REASONS,
  buildPaymentRequired,
  encodeExactPaymentHeader,
  encodeStrKey,
  matchExactPayment,
  parseExactPaymentHeader,
  parsePaymentRequired,
  paymentHeaderScheme,
  encodePaymentHeader,
  type ExactPayment,
  type ExactRequirements,
} from '../src/index.js';

const payTo = encodeStrKey('publicKey', new Uint8Array(32).fill(9));
const treasury = encodeStrKey('publicKey', new Uint8Array(32).fill(4));
const usdc = encodeStrKey('contract', new Uint8Array(32).fill(5));
const escrowId = encodeStrKey('contract', new Uint8Array(32).fill(7));

const quote = {
  resource: 'https://echo.example/',
  description: 'Echoes the payload',
  amount: 100_000n,
  payTo,
  network: 'stellar:testnet' as const,
  asset: 'USDC:GBBD47IF6LWK7P7MDEVSCWR7DPUWV3NY3DTQEVFL4NAT4AQH3ZLLFLA5',
  extra: { service: 'echo', quoteId: 'q_1' },
};
const exact = { asset: usdc, payTo: treasury, maxTimeoutSeconds: 60, extra: { areFeesSponsored: true, service: 'echo' } };
const bazaar = { info: { input: { type: 'http', method: 'POST', bodyType: 'json', body: { text: 'hi' } } }, schema: { type: 'object' } };

const offer: ExactRequirements = {
  scheme: 'exact',
  network: 'stellar:testnet',
  amount: '100000',
  asset: usdc,
  payTo: treasury,
  maxTimeoutSeconds: 60,
  extra: { areFeesSponsored: true, service: 'echo' },
};
const payment: ExactPayment = {
  x402Version: 2,
  resource: { url: 'https://echo.example/', description: 'Echoes the payload', mimeType: 'application/json' },
  accepted: offer,
  payload: { transaction: 'AAAA' },
};
const decode = (header: string) => JSON.parse(Buffer.from(header, 'base64').toString('utf8'));

describe('buildPaymentRequired with exact', () => {
  it('offers exact first, then escrow, in the v2 header; the v1 body offers escrow only (x402 v1 has no exact on Stellar); the extensions in both', () => {
    const { body, headers } = buildPaymentRequired({ ...quote, exact, extensions: { bazaar } });
    const v2 = decode(headers['payment-required']!);
    expect(v2.accepts).toEqual([
      { scheme: 'exact', network: 'stellar:testnet', amount: '100000', asset: usdc, payTo: treasury, maxTimeoutSeconds: 60, extra: exact.extra },
      { scheme: 'escrow', network: 'stellar:testnet', amount: '100000', asset: quote.asset, payTo, maxTimeoutSeconds: 300, extra: quote.extra },
    ]);
    expect(v2.extensions).toEqual({ bazaar });
    expect(v2.resource).toEqual({ url: 'https://echo.example/', description: 'Echoes the payload', mimeType: 'application/json' });
    expect(body.accepts.map((a) => [a.scheme, a.maxAmountRequired, a.asset, a.payTo])).toEqual([['escrow', '100000', quote.asset, payTo]]);
    expect(body.extensions).toEqual({ bazaar });
    const parsed = parsePaymentRequired({ headers, body });
    expect(parsed.accepts.map((a) => a.scheme)).toEqual(['exact', 'escrow']);
    expect(parsed.price).toBe(100_000n);
  });

  it('offers exact alone when escrow is off (in the v2 header; the v1 body offers nothing), the price still at the top level', () => {
    const { body, headers } = buildPaymentRequired({ ...quote, exact, escrow: false, extra: { service: 'echo', priceBaseUnits: '100000' } });
    expect(decode(headers['payment-required']!).accepts.map((a: { scheme: string }) => a.scheme)).toEqual(['exact']);
    expect(body.accepts).toEqual([]);
    expect(body.extra).toEqual({ service: 'echo', priceBaseUnits: '100000' });
  });

  it('skips offers on networks it does not know instead of refusing the quote', () => {
    const header = Buffer.from(
      JSON.stringify({
        x402Version: 2,
        error: 'Payment required',
        resource: { url: 'https://x.example/', description: '', mimeType: '' },
        accepts: [
          { scheme: 'exact', network: 'eip155:8453', amount: '10', asset: '0xabc', payTo: '0xdef', maxTimeoutSeconds: 60 },
          { ...offer, amount: '10' },
        ],
      }),
    ).toString('base64');
    const parsed = parsePaymentRequired({ headers: { 'payment-required': header } });
    expect(parsed.accepts.map((a) => [a.network, a.amount])).toEqual([['stellar:testnet', 10n]]);
  });
});

describe('exact payment headers', () => {
  it('round-trips and names its scheme; escrow envelopes and ids name escrow', () => {
    const header = encodeExactPaymentHeader(payment);
    expect(paymentHeaderScheme(header)).toBe('exact');
    expect(parseExactPaymentHeader(header)).toEqual(payment);
    expect(paymentHeaderScheme(escrowId)).toBe('escrow');
    expect(paymentHeaderScheme(encodePaymentHeader({ escrowId, network: 'stellar:local' }, 2))).toBe('escrow');
    expect(paymentHeaderScheme('not base64 json')).toBeUndefined();
  });

  it('refuses a v1 envelope and a payload without a transaction with the reference reasons', () => {
    const v1 = Buffer.from(JSON.stringify({ x402Version: 1, scheme: 'exact', network: 'stellar:testnet', payload: {} })).toString('base64');
    expect(() => parseExactPaymentHeader(v1)).toThrow(/^invalid_x402_version: exact payments on Stellar are x402 version 2 \(got 1\)$/);
    const noTx = encodeExactPaymentHeader({ ...payment, payload: {} as ExactPayment['payload'] });
    expect(() => parseExactPaymentHeader(noTx)).toThrow(`${EXACT_REASONS.malformed}: the payment header is not an x402 v2 exact payload`);
  });
});

describe('matchExactPayment', () => {
  it('accepts the offer as made, naming its resource', () => {
    expect(matchExactPayment(payment, offer, 'https://echo.example/')).toBeUndefined();
  });

  it('refuses a payload whose resource was stripped, or that was accepted for another service', () => {
    const { resource: _, ...bare } = payment;
    expect(matchExactPayment(bare, offer, 'https://echo.example/')).toEqual({
      reason: 'invalid_payment_requirements',
      message: 'the payment names no resource: send the payload with resource.url https://echo.example/, as the 402 gave it',
    });
    const forEcho = { ...payment, resource: { url: 'https://count.example/' } };
    const wordCount = { ...offer, extra: { areFeesSponsored: true, service: 'word-count' } };
    expect(matchExactPayment(forEcho, wordCount, 'https://count.example/')).toEqual({
      reason: 'invalid_payment_requirements',
      message: 'the payment is for the service "echo" (accepted.extra.service), this is "word-count"',
    });
    expect(matchExactPayment({ ...payment, accepted: { ...offer, scheme: 'escrow' as 'exact' } }, offer, 'https://echo.example/')?.reason).toBe(
      'unsupported_scheme',
    );
  });

  it('refuses another network, token, payee, amount or resource with the reference reason', () => {
    const cases: Array<[Partial<ExactRequirements>, string, string]> = [
      [{ network: 'stellar:pubnet' }, 'network_mismatch', 'the payment is for stellar:pubnet, this service takes exact payments on stellar:testnet'],
      [{ asset: escrowId }, 'invalid_exact_stellar_payload_wrong_asset', `the payment is in token ${escrowId}, this service is paid in ${usdc}`],
      [{ payTo }, 'invalid_exact_stellar_payload_wrong_recipient', `the payment pays ${payTo}, this service is paid to ${treasury}`],
      [{ amount: '99999' }, 'invalid_exact_stellar_payload_wrong_amount', "the payment is for 99999 base units, this payload's price is 100000 base units"],
    ];
    for (const [change, reason, message] of cases) {
      expect(matchExactPayment({ ...payment, accepted: { ...offer, ...change } }, offer, 'https://echo.example/')).toEqual({ reason, message });
    }
    expect(matchExactPayment(payment, offer, 'https://other.example/')).toEqual({
      reason: 'invalid_payment_requirements',
      message: 'the payment is for the resource https://echo.example/, not https://other.example/',
    });
  });
});
