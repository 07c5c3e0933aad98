import type { ChildProcess } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Devnet } from '@farebox/devnet';
import { verifyWebhook } from '@farebox/provider';
import { eventually } from '@farebox/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, spawnGateway } from './process-kit.js';
import { startDevnetForSettlement } from './settlement-kit.js';
import { startReceiver, type WebhookReceiver } from '@farebox/test-kit';

// A gateway killed with SIGKILL between the event and its delivery: the top-up
// and its outbox row committed together, the worker had leased the delivery
// and sent nothing. Restarted on the same data, it sends the event once.

let devnet: Devnet;
let dataDir: string;
let port: number;
let receiver: WebhookReceiver;
const children: ChildProcess[] = [];

async function startChild(crashAt?: string): Promise<{ url: string; exited: Promise<number | null> }> {
  const gw = spawnGateway(
    {
      PORT: String(port),
      FAREBOX_DATA_DIR: dataDir,
      FAREBOX_DEVNET_URL: devnet.url,
      FAREBOX_AUTH_RATE_LIMIT: '1000',
      // The receiver listens on 127.0.0.1.
      FAREBOX_ALLOW_LOOPBACK_ENDPOINTS: 'true',
      FAREBOX_LOG_LEVEL: 'warn',
    },
    crashAt ? { crashAt } : {},
  );
  children.push(gw.child);
  return { url: await gw.started, exited: gw.exited };
}

async function api(url: string, path: string, init: { key?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const res = await fetch(`${url}${path}`, {
    method: init.body === undefined ? 'GET' : 'POST',
    headers: {
      ...(init.key ? { authorization: `Bearer ${init.key}` } : {}),
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...init.headers,
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as any) : undefined, headers: res.headers };
}

beforeAll(async () => {
  devnet = await startDevnetForSettlement();
  dataDir = await mkdtemp(join(tmpdir(), 'farebox-webhook-crash-'));
  port = await freePort();
  receiver = await startReceiver();
}, 30_000);
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await receiver?.close();
  await devnet?.close();
});

describe('a gateway killed between a webhook event and its delivery', () => {
  it('keeps the event in its outbox and sends it once after the restart, signed', async () => {
    let gw = await startChild('webhook:claimed');
    const signup = await api(gw.url, '/auth/signup', { body: { email: `hook-crash-${process.pid}@example.com`, password: 'crash test password' } });
    expect(signup.status).toBe(201);
    const cookie = signup.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const key = (await api(gw.url, '/v1/api-keys', { body: { name: 'k' }, headers: { cookie, 'x-csrf-token': signup.body.csrf_token } })).body.key as string;
    const hook = await api(gw.url, '/v1/webhooks', { key, body: { url: receiver.url, events: ['topup.completed'] } });
    expect(hook.status).toBe(201);
    const before = (await api(gw.url, '/v1/balance', { key })).body.balance_base_units as number;

    // The top-up commits with its event; the worker leases the delivery and the process dies before sending it.
    const topup = await api(gw.url, '/v1/topup', { key, body: { amount: 4 }, headers: { 'idempotency-key': 'crash-hook-1' } }).catch((e: unknown) => e);
    await gw.exited;
    expect(receiver.received).toHaveLength(0);

    gw = await startChild();
    // The top-up was made once (a retry of the request, had it been cut, answers the same).
    const again = await api(gw.url, '/v1/topup', { key, body: { amount: 4 }, headers: { 'idempotency-key': 'crash-hook-1' } });
    expect(again.status).toBe(200);
    if (!(topup instanceof Error)) expect(again.body.topup.id).toBe((topup as { body: { topup: { id: string } } }).body.topup.id);
    expect((await api(gw.url, '/v1/balance', { key })).body.balance_base_units).toBe(before + 40_000_000);

    const got = await eventually('the event is sent after the restart', () => receiver.received[0], { timeoutMs: 20_000 });
    const verdict = await verifyWebhook({ payload: got.body, signature: got.headers['farebox-signature'] as string, secret: hook.body.secret });
    expect(verdict).toMatchObject({ ok: true, event: { type: 'topup.completed', data: { topup_id: again.body.topup.id, amount_base_units: 40_000_000 } } });
    const log = await eventually('the delivery is recorded', async () => {
      const list = (await api(gw.url, `/v1/webhooks/${hook.body.id}/deliveries`, { key })).body as any[];
      return list[0]?.state === 'delivered' ? list : undefined;
    });
    // One delivery: its first claim died with the process (no attempt recorded), the second delivered it.
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ attempts: 2, event_id: got.json.id, log: [{ attempt: 2, status: 200 }] });
    expect(receiver.received).toHaveLength(1);
  }, 120_000);
});
