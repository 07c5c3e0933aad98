import { describe, expect, it } from 'vitest';
import { parsePrice, parsePublisherLinkChallenge, publisherLinkChallenge, signPublisherLink } from '../src/index.js';

const rules = { field: 'pricePerCall', raise: "maxPricePerCall: '{}'" };

describe('parsePrice: a price per call is USDC, and what could be misread is refused with the unit and an example', () => {
  it('takes decimal strings and numbers that cannot be base units', () => {
    expect(parsePrice('0.002', rules)).toBe(20_000n);
    expect(parsePrice(0.002, rules)).toBe(20_000n);
    expect(parsePrice(19, rules)).toBe(190_000_000n);
    expect(parsePrice('100', rules)).toBe(1_000_000_000n);
  });
  it('refuses a whole number of 20 or more as base units, naming the USDC it would be', () => {
    expect(() => parsePrice(20000, rules)).toThrow(
      "pricePerCall 20000 looks like base units: a price is USDC, written as a decimal string, e.g. '0.002' (0.002 USDC = 20000 base units); 20000 base units is '0.002'",
    );
  });
  it('refuses a currency sign or unit with an example', () => {
    expect(() => parsePrice('$0.002', rules)).toThrow(
      `pricePerCall "$0.002": write the USDC amount alone, as a decimal string, e.g. '0.002' (no currency sign or unit)`,
    );
    expect(() => parsePrice('0.002 USDC', rules)).toThrow('write the USDC amount alone');
    expect(() => parsePrice('two', rules)).toThrow(`pricePerCall "two": amount is not a decimal number; a price is USDC as a decimal string, e.g. '0.002'`);
  });
  it('refuses a price over 100 USDC unless the bound is raised, saying how', () => {
    expect(() => parsePrice('150', rules)).toThrow(
      `pricePerCall "150" is 150 USDC per call, over the bound of 100 USDC: a price is USDC, e.g. '0.002'; to charge 150 USDC per call, raise the bound (maxPricePerCall: '150')`,
    );
    expect(parsePrice('150', { ...rules, max: 150n * 10_000_000n })).toBe(1_500_000_000n);
  });
});

describe('publisher link challenges', () => {
  it('round-trip, and any other text is not one', () => {
    const t = { owner: 'GABC', account: 'acc-1', expiresAt: Date.UTC(2026, 0, 1) };
    const text = publisherLinkChallenge(t);
    expect(text).toBe('farebox-publisher-link:v1\nowner: GABC\naccount: acc-1\nexpires: 2026-01-01T00:00:00.000Z');
    expect(parsePublisherLinkChallenge(text)).toEqual(t);
    expect(parsePublisherLinkChallenge(`${text}\n`)).toBeNull();
    expect(parsePublisherLinkChallenge(text.replace('.000Z', 'Z'))).toBeNull();
  });
});

describe('signPublisherLink', () => {
  it('signs the challenge with the seed: the owner key and a signature that verifies', async () => {
    const { createEd25519Signer, verifyEd25519, base64Decode } = await import('../src/index.js');
    const seed = 'SBGWSG6BTNCKCOB3DIFBGCVMUPQFYPA2G4O34RMTB343OYPXU5DJDVMN';
    const owner = (await createEd25519Signer(seed)).publicKey;
    const text = publisherLinkChallenge({ owner, account: 'a', expiresAt: 0 });
    const signed = await signPublisherLink(seed, text);
    expect(signed.owner).toBe(owner);
    expect(await verifyEd25519(owner, new TextEncoder().encode(text), base64Decode(signed.signature)!)).toBe(true);
  });
});
