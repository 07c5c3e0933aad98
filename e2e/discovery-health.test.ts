// The discovery backend shows each service's health from the gateway's feed (docs/api.md, "Service health";
// docs/deploy.md, FAREBOX_HEALTH_FEED_URL) and weighs its search by it, as the gateway does: a replica
// reading a real gateway's /discovery/health after paid calls through that gateway.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningDiscovery } from '@farebox/discovery-service';
import { eventually } from '@farebox/test-kit';
import { startReplica } from './discovery-replica.js';
import { publishDownService, startStack, type Stack } from './stack.js';

let h: Stack;
let replica: RunningDiscovery;

beforeAll(async () => {
  h = await startStack();
  await h.publish('up', '0.001');
  // `down`: every call fails (connection refused) and is refunded.
  await publishDownService(h);
  const caller = await h.user();
  for (let i = 0; i < 10; i++) {
    expect((await caller.api('/v1/call', { body: { service: 'up', payload: { i } } })).status).toBe(200);
    expect((await caller.api('/v1/call', { body: { service: 'down', payload: { i } } })).status).toBe(500);
  }
  await h.gw.core.serviceHealth.sync();
  replica = await startReplica(h.gw.devnet!.url, await mkdtemp(join(tmpdir(), 'farebox-health-replica-')), {
    healthFeedUrl: `${h.url}/discovery/health`,
    healthFeedIntervalMs: 1_000,
  });
}, 120_000);

afterAll(async () => {
  await replica?.close();
  await h?.close();
});

it("carries each service's health from the gateway's feed on /agents, /search and the bazaar, and weighs search by it", async () => {
  const get = async (path: string) => (await (await fetch(`${replica.url}${path}`)).json()) as any;
  await eventually('the replica read the feed and follows both services', async () => (await get('/agents/down')).health?.status === 'failing', {
    timeoutMs: 20_000,
  });
  const gateway = (await h.gw.core.catalog.get('down')).health;
  expect((await get('/agents/down')).health).toEqual(gateway);
  expect((await get('/agents/up')).health).toMatchObject({ status: 'ok', windows: { '1h': { calls: 10, success_rate: 1 } } });
  const listed = (await get('/agents')).agents as Array<{ service: string; health: { status: string } }>;
  expect(Object.fromEntries(listed.map((a) => [a.service, a.health.status]))).toMatchObject({ up: 'ok', down: 'failing' });
  const bazaar = (await get('/discovery/resources')).items as Array<{ serviceName: string; metadata: { health: { status: string } } }>;
  expect(bazaar.find((r) => r.serviceName === 'down')?.metadata.health.status).toBe('failing');
  // "a service" matches both descriptions alike; the failing one is weighed down to a tenth.
  const results = (await get('/search?q=service')).results as Array<{ service: string; score: number }>;
  const up = results.find((r) => r.service === 'up');
  const down = results.find((r) => r.service === 'down');
  expect(up && down).toBeTruthy();
  expect(results.indexOf(up!)).toBeLessThan(results.indexOf(down!));
});
