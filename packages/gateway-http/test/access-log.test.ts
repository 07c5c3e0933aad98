// The access log of the handler: health probes are written at debug, users'
// requests at info, each under its full route. (The embedded devnet's traffic
// under /devnet is the host's: apps/gateway/test/access-log.test.ts.)
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { LogLevel } from '@farebox/gateway-core';
import { eventually } from '@farebox/test-kit';
import { startHttpStack, type HttpStack } from './kit.js';

let s: HttpStack;
const lines = () => s.logs().map((l) => JSON.parse(l) as Record<string, unknown>);
const requests = (level?: LogLevel) => lines().filter((l) => l.event === 'request' && (level === undefined || l.level === level));

beforeAll(async () => {
  s = await startHttpStack({ logLevel: 'debug' });
}, 60_000);
afterAll(async () => {
  await s?.close();
});

it('writes health probes at debug and users requests at info', async () => {
  await s.fetch('/health');
  await s.fetch('/health/ready');
  await s.fetch('/v1/platform/key');
  await eventually('the platform key request is logged', () => requests().some((r) => r.route === '/v1/platform/key'));

  const debug = requests('debug');
  expect(new Set(debug.map((r) => r.route))).toEqual(new Set(['/health', '/health/ready']));
  const info = requests('info');
  expect(info.map((r) => r.route)).toEqual(['/v1/platform/key']);
  expect(requests().some((r) => r.route === 'unmatched')).toBe(false);
});

it('logs a refused request under its full route: a 401 and a 403 under /v1 are /v1/..., not the path inside the router (issue 50)', async () => {
  await s.fetch('/v1/publisher/overview');
  await s.fetch('/v1/agents/nope', { headers: { authorization: 'Bearer sk_live_unknown' } });
  const signup = await s.fetch('/auth/signup', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: `log${process.pid}@example.com`, password: 'correct horse battery' }),
  });
  const cookie = (signup.headers.getSetCookie?.() ?? []).map((c) => c.split(';')[0]).join('; ');
  expect((await s.fetch('/v1/publisher/overview', { headers: { cookie } })).status).toBe(403);
  await eventually('the three are logged', () => requests().filter((r) => r.status === 401 || r.status === 403).length >= 3);
  const refused = requests().filter((r) => r.status === 401 || r.status === 403);
  expect(refused.map((r) => `${r.status} ${r.route}`).sort()).toEqual(['401 /v1/agents/:service', '401 /v1/publisher/overview', '403 /v1/publisher/overview']);
});
