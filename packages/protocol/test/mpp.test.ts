// The `Payment` scheme's wire format, checked against mppx 0.11 (code nobody here wrote): its challenges, ids,
// credentials and receipts read by ours and ours by it, with one secret on both sides.
import { Challenge, Credential, Receipt } from 'mppx';
import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  challengeId,
  createPaymentChallenge,
  formatPaymentChallenge,
  formatPaymentCredential,
  formatPaymentReceipt,
  isOwnChallenge,
  MppError,
  mppProblem,
  parsePaymentChallenges,
  parsePaymentCredential,
  parsePaymentReceipt,
  parseStellarVoucher,
} from '../src/index.js';

const SECRET = 'a-server-secret-of-at-least-32-bytes!';
const CHANNEL = 'CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA';
const request = { amount: '20000', channel: CHANNEL, methodDetails: { reference: 'r-1', network: 'stellar:testnet', cumulativeAmount: '40000' } };
const fields = { realm: 'gateway.farebox.test', method: 'stellar', intent: 'channel', request, expires: '2026-12-02T12:05:00.000Z' };

function refusal(fn: () => unknown): MppError {
  try {
    fn();
  } catch (err) {
    if (err instanceof MppError) return err;
    throw err;
  }
  throw new Error('not refused');
}

describe('challenges', () => {
  it('gives the id mppx gives the same fields under the same secret, and mppx verifies ours', async () => {
    const theirs = Challenge.from({ ...fields, secretKey: SECRET });
    expect(await challengeId(SECRET, fields)).toBe(theirs.id);
    const ours = await createPaymentChallenge(SECRET, { ...fields, description: 'word-count, 0.002 USDC' });
    const read = Challenge.deserialize(formatPaymentChallenge(ours));
    expect(read.request).toEqual(request);
    expect(read.description).toBe('word-count, 0.002 USDC');
    expect(Challenge.verify(read, { secretKey: SECRET })).toBe(true);
    expect(Challenge.verify(read, { secretKey: `${SECRET}x` })).toBe(false);
  });

  it("reads mppx's header, several challenges in one value, and skips other schemes", async () => {
    const a = Challenge.from({ ...fields, secretKey: SECRET });
    const b = Challenge.from({ ...fields, intent: 'charge', request: { amount: '20000', currency: CHANNEL, recipient: 'G' }, secretKey: SECRET });
    const header = `Bearer realm="x", error="invalid_token", ${Challenge.serialize(a)}, ${Challenge.serialize(b)}`;
    const read = parsePaymentChallenges(header);
    expect(read.map((c) => [c.id, c.intent])).toEqual([
      [a.id, 'channel'],
      [b.id, 'charge'],
    ]);
    expect(read[0]!.request).toEqual(request);
    expect(await isOwnChallenge(SECRET, read[0]!)).toBe(true);
    expect(parsePaymentChallenges([Challenge.serialize(a), 'Basic realm="y"'])).toHaveLength(1);
  });

  it('is not its own once a bound field changes (the price, the channel, the expiry)', async () => {
    const ours = await createPaymentChallenge(SECRET, fields);
    expect(await isOwnChallenge(SECRET, ours)).toBe(true);
    expect(await isOwnChallenge(SECRET, { ...ours, request: { ...request, amount: '1' } })).toBe(false);
    expect(await isOwnChallenge(SECRET, { ...ours, expires: '2027-01-01T00:00:00.000Z' })).toBe(false);
    expect(await isOwnChallenge(SECRET, { ...ours, id: ours.id.slice(1) })).toBe(false);
  });

  it('refuses a secret shorter than 32 bytes', async () => {
    expect(() => challengeId('short', fields)).toThrow('at least 32 bytes');
  });
});

describe('credentials', () => {
  it("reads mppx's credential, and mppx reads ours", async () => {
    const challenge = Challenge.from({ ...fields, secretKey: SECRET });
    const payload = { action: 'voucher', amount: '60000', signature: 'ab'.repeat(64) };
    const theirs = Credential.serialize({ challenge, payload, source: 'did:pkh:stellar:testnet:GABC' });
    const read = parsePaymentCredential(theirs);
    expect(read.challenge.id).toBe(challenge.id);
    expect(read.challenge.request).toEqual(request);
    expect(read.source).toBe('did:pkh:stellar:testnet:GABC');
    expect(read.payload).toEqual(payload);
    expect(await isOwnChallenge(SECRET, read.challenge)).toBe(true);

    const ours = formatPaymentCredential({ challenge: await createPaymentChallenge(SECRET, fields), payload });
    const back = Credential.deserialize(ours);
    expect(back.payload).toEqual(payload);
    expect(Challenge.verify(back.challenge as Challenge.Challenge, { secretKey: SECRET })).toBe(true);
  });

  it('refuses what is not a credential as malformed-credential', () => {
    for (const bad of ['Bearer abc', 'Payment', 'Payment !!!', `Payment ${Buffer.from('[1]').toString('base64url')}`])
      expect(refusal(() => parsePaymentCredential(bad)).code).toBe('malformed-credential');
    const noRequest = Buffer.from(JSON.stringify({ challenge: { id: 'x', realm: 'r', method: 'stellar', intent: 'channel' }, payload: {} })).toString(
      'base64url',
    );
    expect(refusal(() => parsePaymentCredential(`Payment ${noRequest}`)).message).toBe("the credential's challenge has no request");
  });
});

describe('receipts and problems', () => {
  it("reads mppx's receipt, and mppx reads ours", () => {
    const theirs = Receipt.serialize(Receipt.from({ method: 'stellar', reference: 'r-1', status: 'success', timestamp: '2026-12-02T12:00:00.000Z' }));
    expect(parsePaymentReceipt(theirs)).toMatchObject({ method: 'stellar', reference: 'r-1', status: 'success' });
    const ours = formatPaymentReceipt({ status: 'success', method: 'stellar', reference: 'r-2', timestamp: '2026-12-02T12:00:00.000Z', challengeId: 'c' });
    expect(Receipt.deserialize(ours)).toMatchObject({ method: 'stellar', reference: 'r-2' });
  });

  it('writes the draft problem documents', () => {
    expect(mppProblem('verification-failed', 'the voucher signature does not verify', { challengeId: 'x' })).toEqual({
      type: 'https://paymentauth.org/problems/verification-failed',
      title: 'Payment Verification Failed',
      status: 402,
      detail: 'the voucher signature does not verify',
      challengeId: 'x',
    });
  });
});

describe('vouchers and canonical JSON', () => {
  it('takes a voucher as the stellar channel intent writes it, and refuses any other shape as invalid-payload', () => {
    const v = parseStellarVoucher({ action: 'voucher', amount: '60000', signature: '0f'.repeat(64) });
    expect(v.amount).toBe(60000n);
    expect(v.signature).toHaveLength(64);
    expect(v.signature[0]).toBe(15);
    for (const bad of [
      null,
      { action: 'pay', amount: '1', signature: '00'.repeat(64) },
      { action: 'voucher', amount: 1, signature: '00'.repeat(64) },
      { action: 'voucher', amount: '01', signature: '00'.repeat(64) },
      { action: 'voucher', amount: '-1', signature: '00'.repeat(64) },
      { action: 'voucher', amount: '99999999999999999999', signature: '00'.repeat(64) },
      { action: 'voucher', amount: '1', signature: 'AB'.repeat(64) },
      { action: 'voucher', amount: '1', signature: '00'.repeat(63) },
    ])
      expect(refusal(() => parseStellarVoucher(bad)).code).toBe('invalid-payload');
  });

  it('sorts keys at every depth and leaves out undefined', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, 'x'], c: null, e: undefined }, é: true })).toBe('{"a":{"c":null,"d":[1,"x"]},"b":1,"é":true}');
    expect(() => canonicalJson({ a: 1n })).toThrow('bigint');
  });
});
