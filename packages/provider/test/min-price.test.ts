import { ConfigError, MIN_PRICE_BASE_UNITS, ManifestSchema, splitFee } from '@farebox/protocol';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createProvider, type Provider, type ProviderOptions } from '../src/index.js';
import { baseOptions, newSigner, post, type Signer } from './helpers.js';

let platform: Signer;
const started: Provider[] = [];
beforeAll(async () => {
  platform = await newSigner();
});
afterEach(async () => {
  await Promise.all(started.splice(0).map((p) => p.close()));
});

const MIN_PRICE_PROBLEM = 'pricePerCall must be at least 0.000002 USDC (20 base units), so that the 5 % platform fee of a call is at least one base unit';

function problems(options: ProviderOptions): string[] {
  try {
    createProvider(options);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}

describe('the lowest price a provider takes', () => {
  it('is 20 base units, the least whose 5 % fee is one base unit', () => {
    expect(MIN_PRICE_BASE_UNITS).toBe(20n);
    expect(splitFee(MIN_PRICE_BASE_UNITS).fee).toBe(1n);
    expect(splitFee(MIN_PRICE_BASE_UNITS - 1n).fee).toBe(0n);
  });

  it('refuses a price under it at construction, with every other problem', () => {
    for (const price of ['0.0000019', '0.0000001', 0.0000019, '0']) {
      expect(problems(baseOptions(platform, { pricePerCall: price })), String(price)).toEqual([MIN_PRICE_PROBLEM]);
    }
    expect(problems(baseOptions(platform, { pricePerCall: '0.0000019', service: '' }))).toEqual(['service: service required', MIN_PRICE_PROBLEM]);
    expect(problems(baseOptions(platform, { pricePerCall: '0.000002' }))).toEqual([]);
  });

  it('is the floor of its manifest and of every quote, dynamic ones included', async () => {
    const provider = createProvider(baseOptions(platform, { pricePerCall: '0.000002', priceFn: (p) => (p as { n: number | string }).n })).serve((payload) => ({
      echo: payload,
    }));
    started.push(provider);
    const listening = await provider.listen(0, '127.0.0.1');
    const url = `${listening.url}/`;
    expect(ManifestSchema.parse(await (await fetch(`${listening.url}/manifest`)).json())).toMatchObject({ priceBaseUnits: '20', dynamicPricing: true });
    for (const [n, quoted] of [
      [0.0000001, '20'],
      ['0.0000019', '20'],
      ['0.0000021', '21'],
    ] as const) {
      const res = await post(url, JSON.stringify({ n }));
      expect(res.status).toBe(402);
      expect((res.json?.extra as { priceBaseUnits: string } | undefined)?.priceBaseUnits, String(n)).toBe(quoted);
    }
  });
});

describe('a price that could be misread (issue 50)', () => {
  it('refuses base units written as a number, a dollar sign, and a price over 100 USDC, naming the unit and an example', () => {
    expect(problems(baseOptions(platform, { pricePerCall: 20000 }))).toEqual([
      "pricePerCall 20000 looks like base units: a price is USDC, written as a decimal string, e.g. '0.002' (0.002 USDC = 20000 base units); 20000 base units is '0.002'",
    ]);
    expect(problems(baseOptions(platform, { pricePerCall: '$0.002' }))).toEqual([
      `pricePerCall "$0.002": write the USDC amount alone, as a decimal string, e.g. '0.002' (no currency sign or unit)`,
    ]);
    expect(problems(baseOptions(platform, { pricePerCall: '250' }))).toEqual([
      `pricePerCall "250" is 250 USDC per call, over the bound of 100 USDC: a price is USDC, e.g. '0.002'; to charge 250 USDC per call, raise the bound (maxPricePerCall: '250')`,
    ]);
  });
  it('takes the decimal string, a small number, and a high price with the bound raised', () => {
    for (const [price, units] of [
      ['0.002', 20_000n],
      [0.002, 20_000n],
      [5, 50_000_000n],
    ] as const) {
      const p = createProvider(baseOptions(platform, { pricePerCall: price }));
      expect(p.config.pricePerCall, String(price)).toBe(units);
    }
    expect(createProvider(baseOptions(platform, { pricePerCall: '250', maxPricePerCall: '250' })).config.pricePerCall).toBe(2_500_000_000n);
  });
});
