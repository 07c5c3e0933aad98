import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifyWebhook } from '@farebox/provider';
import { eventually } from '@farebox/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../src/index.js';
import { dropTestSchema, startHarness, TEST_DATABASE_URL, type Harness } from './harness.js';
import { startReceiver, type WebhookReceiver } from '@farebox/test-kit';

// Two gateways on one PostgreSQL database, each with its own delivery worker:
// every event is sent once (deliveries are claimed FOR UPDATE SKIP LOCKED
// under a lease), whichever gateway wrote it, signed with the one secret both
// open (the same FAREBOX_KEYSTORE_KEY).

describe('webhooks on two gateways sharing a database', () => {
  let a: Harness;
  let b: RunningGateway;
  let receiver: WebhookReceiver;
  const schema = `webhooks_${process.pid}_${Date.now()}`;

  beforeAll(async () => {
    const env = { FAREBOX_KEYSTORE_KEY: randomBytes(32).toString('hex') };
    a = await startHarness('postgres', { databaseSchema: schema, env });
    b = await startGateway({
      port: 0,
      network: 'local',
      allowLoopbackEndpoints: true,
      logLevel: 'warn',
      dataDir: await mkdtemp(join(tmpdir(), 'farebox-webhooks-b-')),
      databaseUrl: TEST_DATABASE_URL,
      databaseSchema: schema,
      devnetUrl: `${a.url}/devnet`,
      embedDevnet: false,
      rateLimits: { authPerMinute: 1000 },
      env,
    });
    receiver = await startReceiver();
  }, 180_000);

  afterAll(async () => {
    await receiver?.close();
    await b?.close();
    await a?.close();
    await dropTestSchema(schema);
  });

  it('sends each event once, whichever gateway wrote it and whichever worker claims it', async () => {
    const u = await a.user();
    const w = await u.api('/v1/webhooks', { body: { url: receiver.url, events: ['topup.completed'] } });
    expect(w.status).toBe(201);
    const onB = (path: string, body: unknown) =>
      fetch(`${b.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${u.key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const topups = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        i % 2 === 0 ? u.api('/v1/topup', { body: { amount: 1 } }).then((r) => r.status) : onB('/v1/topup', { amount: 1 }).then((r) => r.status),
      ),
    );
    expect(topups).toEqual(Array(24).fill(200));
    await eventually('24 events delivered', () => receiver.received.length >= 24, { timeoutMs: 30_000 });
    // Both workers had their turns; give them one more pass each: nothing is sent twice.
    await a.gw.core.webhooks.worker.flush();
    await b.core.webhooks.worker.flush();
    expect(receiver.received).toHaveLength(24);
    expect(new Set(receiver.received.map((r) => r.json.id)).size).toBe(24);
    for (const r of receiver.received)
      expect((await verifyWebhook({ payload: r.body, signature: r.headers['farebox-signature'] as string, secret: w.body.secret })).ok).toBe(true);
    const log = (await u.api(`/v1/webhooks/${w.body.id}/deliveries?limit=100`)).body as Array<{ state: string; attempts: number }>;
    expect(log).toHaveLength(24);
    expect(log.every((d) => d.state === 'delivered' && d.attempts === 1)).toBe(true);
  }, 120_000);
});
