import { afterAll, beforeAll, expect, it } from 'vitest';
import { startHttpStack, type HttpAccount, type HttpStack } from './kit.js';

// Issue 50, item 3: the API takes a price as USDC in a decimal string (`price`), or in base units
// (`pricePerCallLamports`); what could be misread is refused with the unit and an example, and nothing is registered.

let s: HttpStack;
let pub: HttpAccount;
let endpoint: string;
const name = `priced-${process.pid % 100000}`;

beforeAll(async () => {
  s = await startHttpStack();
  pub = await s.account();
  expect((await pub.api('/v1/publisher/activate', { body: { name: 'Prices' } })).status).toBe(200);
  endpoint = (await s.serve(name, '0.002', pub.wallet)).endpoint;
}, 60_000);
afterAll(async () => {
  await s?.close();
});

const body = (more: Record<string, unknown>) => ({ service: name, endpoint, description: 'prices', ...more });

it('refuses a price that could be misread, naming the unit, with an example; nothing is registered', async () => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{}, 'price required: USDC per call as a decimal string, e.g. "0.002" (or pricePerCallLamports, in base units: 20000)'],
    [{ price: '$0.002' }, `price "$0.002": write the USDC amount alone, as a decimal string, e.g. '0.002' (no currency sign or unit)`],
    [{ price: 0.002 }, 'price must be a string: USDC per call as a decimal string, e.g. "0.002"'],
    [
      { price: '20000' },
      `price "20000" is 20000 USDC per call, over the bound of 100 USDC: a price is USDC, e.g. '0.002'; to charge 20000 USDC per call, raise the bound (maxPrice: '20000')`,
    ],
    [
      { pricePerCallLamports: 2_000_000_000 },
      `pricePerCallLamports 2000000000 is 200 USDC per call, over the bound of 100 USDC (base units: 0.002 USDC is 20000); to charge 200 USDC per call, raise the bound (maxPrice: '200')`,
    ],
    [{ price: '0.002', pricePerCallLamports: 20_000 }, 'give price (USDC, e.g. "0.002") or pricePerCallLamports (base units), not both'],
  ];
  for (const [more, error] of cases) {
    const r = await pub.api('/v1/agents', { body: body(more) });
    expect(r, JSON.stringify(more)).toMatchObject({ status: 400, body: { error } });
  }
  expect((await pub.api('/v1/agents/mine')).body).toEqual([]);
});

it('takes "0.002" as 0.002 USDC (20000 base units), and a high price with maxPrice', async () => {
  const r = await pub.api('/v1/agents', { body: body({ price: '0.002' }) });
  expect(r.status).toBe(201);
  expect(r.body).toMatchObject({ service: name, pricePerCall: 0.002, pricePerCallBaseUnits: 20_000 });
  const high = await pub.api(`/v1/agents/${name}`, { method: 'PUT', body: { price: '150', maxPrice: '150' } });
  expect(high.status).toBe(200);
  expect(high.body.pricePerCallBaseUnits).toBe(1_500_000_000);
  const back = await pub.api(`/v1/agents/${name}`, { method: 'PUT', body: { price: '0.0025' } });
  expect(back.body.pricePerCallBaseUnits).toBe(25_000);
});
