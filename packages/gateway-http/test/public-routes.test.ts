import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { operationList } from '@farebox/contract';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startHttpStack, type HttpStack } from './kit.js';

// Issue 50: docs/api.md says which routes (the catalog's among them) answer without a credential, and the
// gateway agrees: the list is the contract's `auth: none`, and a request without a key is answered as it says.

const API_MD = readFileSync(fileURLToPath(new URL('../../../docs/api.md', import.meta.url)), 'utf8');

function documented(): string[] {
  const block = /<!-- no-credential routes: start -->([\s\S]*?)<!-- no-credential routes: end -->/.exec(API_MD)?.[1] ?? '';
  return [...block.matchAll(/`((?:GET|POST|PUT|PATCH|DELETE) [^`]+)`/g)].map((m) => m[1]!).sort();
}

let s: HttpStack;
beforeAll(async () => {
  s = await startHttpStack();
}, 60_000);
afterAll(async () => {
  await s?.close();
});

it('docs/api.md lists exactly the operations that need no credential', () => {
  expect(documented()).toEqual(
    operationList
      .filter((o) => o.auth.kind === 'none')
      .map((o) => `${o.method} ${o.path}`)
      .sort(),
  );
});

it('without a key, the bazaar and an owner’s earnings answer; the catalog search and a service need a credential', async () => {
  expect((await s.request('/discovery/resources')).status).toBe(200);
  expect((await s.request('/discovery/health')).status).toBe(200);
  const owner = 'GAAZI4TCR3TY5OJHCTJC2A4QSY6CJWJH5IAJTGKIN2ER7LBNVKOCCWN7';
  expect((await s.request(`/v1/publisher/by-owner/${owner}`)).body).toMatchObject({ owner, calls: 0, services: [], payouts: [] });
  for (const path of ['/v1/agents', '/v1/agents?q=echo', '/v1/agents/echo']) {
    expect(await s.request(path)).toMatchObject({ status: 401, body: { error: 'authentication required' } });
  }
});
