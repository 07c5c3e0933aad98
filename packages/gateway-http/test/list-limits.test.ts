import { operationList } from '@farebox/contract';
import { grantOperator } from '@farebox/gateway-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpStack, type HttpAccount, type HttpStack } from './kit.js';

// The spec: "List endpoints are not paginated; they accept a `limit` query
// parameter." Every list of the contract (a GET answering an array) is found
// here from the operation table, not from a hand-kept list: each takes `limit`
// within the bound its documented 400 names, refuses anything else with that
// bound in the message, and answers at the bound. A daily series is bounded by
// `days` instead.

const BOUND = /invalid (limit|days) \(must be 1 <= n <= (\d+)\)/;

const lists = operationList
  .filter((op) => op.method === 'GET' && (op.output as { _zod?: { def?: { type?: string } } })._zod?.def?.type === 'array')
  .map((op) => {
    const shape = (op.input as { query?: { shape?: Record<string, unknown> } }).query?.shape ?? {};
    const bound = BOUND.exec(String((op.errors as Record<number, string>)[400] ?? ''));
    return { id: op.id, path: op.path, params: Object.keys(shape), param: bound?.[1], max: bound ? Number(bound[2]) : undefined };
  });

describe('limit on every list endpoint', () => {
  let h: HttpStack;
  let operator: HttpAccount;

  beforeAll(async () => {
    h = await startHttpStack();
    operator = await h.account();
    // An operator with publishing on reaches every list, the operator's and the publisher's included.
    await grantOperator(h.core.db, operator.id, 'test');
    expect((await operator.api('/v1/publisher/activate', { body: { name: 'Limits Co' } })).status).toBeLessThan(300);
  }, 120_000);
  afterAll(async () => {
    await h?.close();
  });

  it('finds the lists in the contract, each naming its bound in its documented 400', () => {
    expect(lists.map((l) => l.path)).toEqual(
      expect.arrayContaining([
        '/v1/agents',
        '/v1/agents/mine',
        '/v1/api-keys',
        '/v1/oauth/connections',
        '/v1/transactions',
        '/v1/publisher/settlements',
        '/v1/operator/disputes',
        '/v1/operator/settlements',
        '/v1/operator/audit',
        '/v1/webhooks',
        '/v1/webhooks/:id/deliveries',
      ]),
    );
    for (const l of lists) {
      expect(l.max, `${l.path}: its 400 names no bound`).toBeGreaterThan(0);
      // The daily series (analytics) is bounded by days; every other list by limit.
      expect(l.params, l.path).toContain(l.path === '/v1/publisher/analytics' ? 'days' : 'limit');
      if (l.path !== '/v1/publisher/analytics') expect(l.param, l.path).toBe('limit');
    }
  });

  it("refuses a value out of bounds or not an integer with 400 naming the bound, and takes the bound itself, on each list's route", async () => {
    // A list of one thing's parts (a webhook's deliveries) is read of a thing of the operator's.
    const hook = await operator.api('/v1/webhooks', { body: { url: 'http://127.0.0.1:9/hooks', events: ['topup.completed'] } });
    expect(hook.status).toBe(201);
    for (const { path, param, max } of lists) {
      const url = path.replace(':service', 'x').replace(':id', hook.body.id);
      for (const bad of ['abc', '0', String(max! + 1), '1.5', '-1', '1e2']) {
        const r = await operator.api(`${url}?${param}=${bad}`);
        expect(r, `${url}?${param}=${bad}`).toMatchObject({ status: 400, body: { error: `invalid ${param} (must be 1 <= n <= ${max})` } });
      }
      const twice = await operator.api(`${url}?${param}=1&${param}=2`);
      expect(twice, `${url} with ${param} twice`).toMatchObject({ status: 400, body: { error: `invalid ${param} (must be 1 <= n <= ${max})` } });
      const atBound = await operator.api(`${url}?${param}=${max}`);
      expect(atBound.status, `${url}?${param}=${max}: ${JSON.stringify(atBound.body)}`).toBe(200);
      expect(Array.isArray(atBound.body), url).toBe(true);
    }
  });
});
