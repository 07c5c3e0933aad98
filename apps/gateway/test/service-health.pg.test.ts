import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../src/index.js';
import { dropTestSchema, startHarness, type Harness, type TestUser } from './harness.js';

// Service health is durable and shared (docs/api.md, "Service health"): two gateways on one PostgreSQL,
// calls through both; each adds its counts to the same rows, and both then show the sum. A gateway
// closed with counts not yet written writes them first.

describe('service health on two gateways sharing PostgreSQL', () => {
  let a: Harness;
  let b: RunningGateway;
  let alice: TestUser;
  const schema = `health_${process.pid}_${Date.now()}`;

  beforeAll(async () => {
    const env = { FAREBOX_KEYSTORE_KEY: randomBytes(32).toString('hex') };
    a = await startHarness('postgres', { databaseSchema: schema, env });
    b = await startGateway({
      port: 0,
      network: 'local',
      allowLoopbackEndpoints: true,
      logLevel: 'warn',
      dataDir: await mkdtemp(join(tmpdir(), 'farebox-health-b-')),
      databaseUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
      databaseSchema: schema,
      baseUrl: a.url,
      devnetUrl: `${a.url}/devnet`,
      embedDevnet: false,
      env,
    });
    alice = await a.user();
    await a.publish('shared', { price: '0.001' });
    await b.core.mirror.syncOnce();
  }, 180_000);

  afterAll(async () => {
    await b?.close();
    await a?.close();
    await dropTestSchema(schema);
  });

  it('both gateways count into the same rows and show the same figures', async () => {
    const on = (url: string) =>
      fetch(`${url}/v1/call`, {
        method: 'POST',
        headers: { authorization: `Bearer ${alice.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ service: 'shared', payload: {} }),
      });
    const answers = await Promise.all([...Array.from({ length: 7 }, () => on(a.url)), ...Array.from({ length: 5 }, () => on(b.url))]);
    expect(answers.map((r) => r.status)).toEqual(Array(12).fill(200));
    await a.gw.core.serviceHealth.sync();
    await b.core.serviceHealth.sync();
    await a.gw.core.serviceHealth.sync();
    const seen = async (url: string) =>
      (await (await fetch(`${url}/v1/agents/shared`, { headers: { authorization: `Bearer ${alice.key}` } })).json()) as { health: unknown };
    const fromA = await seen(a.url);
    expect(fromA.health).toMatchObject({ status: 'ok', windows: { '1h': { calls: 12, success_rate: 1 }, '7d': { calls: 12 } } });
    expect((await seen(b.url)).health).toEqual(fromA.health);
  });
});
