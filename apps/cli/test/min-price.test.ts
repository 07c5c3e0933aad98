import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cli } from './run.js';

// The lowest price (MIN_PRICE_BASE_UNITS of @farebox/protocol), as `farebox` applies it (in process: runCli) before anything is written or sent.
const PROBLEM = 'must be at least 0.000002 USDC (20 base units), so that the 5 % platform fee of a call is at least one base unit';

describe('farebox and the lowest price', () => {
  let tmp: string;
  const env = () => ({
    PATH: process.env.PATH ?? '',
    HOME: tmp,
    FAREBOX_CONFIG_DIR: join(tmp, 'farebox'),
    FAREBOX_URL: 'http://127.0.0.1:9',
    FAREBOX_API_KEY: 'sk_live_unused',
    BROWSER: 'none',
  });

  beforeAll(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'farebox-cli-price-'));
  });

  it('init refuses a price under 20 base units and writes nothing; 20 is taken', async () => {
    for (const price of ['0.0000019', '0']) {
      const dir = join(tmp, `cheap-${price.length}`);
      const r = await cli(['init', dir, '--name', 'cheap', '--price', price], { env: env() });
      expect(r.code, price).toBe(2);
      expect(r.stderr, price).toContain(`--price ${JSON.stringify(price)}: ${PROBLEM}`);
      expect(existsSync(dir), price).toBe(false);
    }
    const ok = await cli(['init', join(tmp, 'cheapest'), '--name', 'cheapest', '--price', '0.000002', '--json'], { env: env() });
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ service: 'cheapest', price: '0.000002' });
  });

  it('publisher register and update refuse it before they contact the gateway', async () => {
    for (const args of [
      ['publisher', 'register', '--service', 'cheap', '--price', '0.0000019', '--endpoint', 'https://example.com/x', '--description', 'd'],
      ['publisher', 'update', 'cheap', '--price', '0.0000019'],
    ]) {
      const r = await cli(args, { env: env() });
      expect(r.code, args[1]).toBe(2);
      expect(r.stderr, args[1]).toContain(`--price "0.0000019": ${PROBLEM}`);
    }
  });
});

describe('a --price that could be misread (issue 50)', () => {
  let tmp: string;
  const env = () => ({
    PATH: process.env.PATH ?? '',
    HOME: tmp,
    FAREBOX_CONFIG_DIR: join(tmp, 'farebox'),
    FAREBOX_URL: 'http://127.0.0.1:9',
    FAREBOX_API_KEY: 'sk_live_unused',
    BROWSER: 'none',
  });
  beforeAll(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'farebox-cli-price-'));
  });

  it('base units, a dollar sign and a price over 100 USDC are refused with the unit and an example, before the gateway is contacted', async () => {
    const register = (price: string, ...more: string[]) =>
      cli(['publisher', 'register', '--service', 'rev', '--price', price, ...more, '--endpoint', 'https://example.com/x', '--description', 'd'], {
        env: env(),
      });
    const units = await register('20000');
    expect(units.code).toBe(2);
    expect(units.stderr).toContain(
      `--price "20000" is 20000 USDC per call, over the bound of 100 USDC: a price is USDC, e.g. '0.002'; to charge 20000 USDC per call, raise the bound (--max-price 20000)`,
    );
    const dollar = await cli(['publisher', 'update', 'rev', '--price', '$0.002'], { env: env() });
    expect(dollar.code).toBe(2);
    expect(dollar.stderr).toContain(`--price "$0.002": write the USDC amount alone, as a decimal string, e.g. '0.002' (no currency sign or unit)`);
    // Raised explicitly, the price is sent (the gateway here does not answer: the refusal is about reaching it).
    const raised = await register('150', '--max-price', '150');
    expect(raised.code).toBe(1);
    expect(raised.stderr).toContain('cannot reach the gateway');
    const init = await cli(['init', join(tmp, 'pricey'), '--name', 'pricey', '--price', '500'], { env: env() });
    expect(init.code).toBe(2);
    expect(init.stderr).toContain(`raise the bound (set maxPricePerCall: '500' next to pricePerCall in the scaffold's src/index.ts)`);
    expect(existsSync(join(tmp, 'pricey'))).toBe(false);
  });
});
