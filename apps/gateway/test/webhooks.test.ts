import { verifyWebhook as clientVerify } from '@farebox/client';
import { verifyWebhook, WEBHOOK_EVENT_TYPES } from '@farebox/provider';
import { closedPort, eventually, testClock } from '@farebox/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness, type TestUser } from './harness.js';
import { startReceiver, type ReceivedWebhook, type WebhookReceiver } from '@farebox/test-kit';

// Signed webhooks over HTTP (docs/webhooks.md): a real gateway on PGlite, a
// receiver on a loopback port (the harness allows loopback endpoints), and the
// test's clock to make retries fall due.

const clock = testClock();
let h: Harness;
const receivers: WebhookReceiver[] = [];
beforeAll(async () => {
  h = await startHarness('pglite', { now: clock.now });
}, 60_000);
afterAll(async () => {
  for (const r of receivers) await r.close();
  await h?.close();
});

const ALL = WEBHOOK_EVENT_TYPES.join(', ');
async function receiver(port?: number): Promise<WebhookReceiver> {
  const r = await startReceiver(port);
  receivers.push(r);
  return r;
}
/** The signed-in owner (the dashboard's session, with its CSRF token on writes). */
const session =
  (u: TestUser) =>
  async (path: string, init: { method?: string; body?: unknown } = {}) => {
    const res = await fetch(`${h.url}${path}`, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: { cookie: u.cookie, 'x-csrf-token': u.csrf, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
async function register(u: TestUser, url: string, events: string[] = ['topup.completed']) {
  const r = await u.api('/v1/webhooks', { body: { url, events } });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body as { id: string; secret: string; url: string; events: string[] };
}
const deliveries = async (u: TestUser, id: string) => (await u.api(`/v1/webhooks/${id}/deliveries`)).body as any[];
const verified = (got: ReceivedWebhook, secret: string | string[]) =>
  verifyWebhook({ payload: got.body, signature: got.headers['farebox-signature'] as string, secret, now: clock.now });

describe('registering webhook endpoints', () => {
  it('registers with the session or a manage key, shows the secret once, and lists the endpoints without it', async () => {
    const u = await h.user();
    const r = await receiver();
    const created = await session(u)('/v1/webhooks', { body: { url: r.url, events: ['topup.completed', 'budget.threshold_reached', 'topup.completed'] } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      id: expect.stringMatching(/^whk_/),
      url: r.url,
      events: ['topup.completed', 'budget.threshold_reached'],
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{43}$/),
      rotated_at: null,
      previous_secret_expires_at: null,
    });
    expect(created.body.secret_prefix).toBe(created.body.secret.slice(0, 10));
    const byKey = await register(u, r.url, ['settlement.released']);
    const list = await u.api('/v1/webhooks');
    expect(list.status).toBe(200);
    expect(list.body.map((w: { id: string }) => w.id)).toEqual([created.body.id, byKey.id]);
    expect(JSON.stringify(list.body)).not.toContain(created.body.secret);
    expect(list.body[0]).not.toHaveProperty('secret');
    // The secret is not in the database in clear either: sealed under the keystore key.
    const { rows } = await h.gw.core.db.query<{ secret_sealed: string }>('SELECT secret_sealed FROM gw_webhook_endpoints WHERE id = $1', [created.body.id]);
    expect(rows[0]!.secret_sealed).not.toContain(created.body.secret.slice(6));
  });

  it('refuses bad input with the exact reason and registers nothing', async () => {
    const u = await h.user();
    const r = await receiver();
    const gatewayPort = new URL(h.url).port;
    const cases: Array<[unknown, string]> = [
      [{ events: ['topup.completed'] }, 'url required'],
      [{ url: r.url }, `events required: a list of one or more of ${ALL}`],
      [{ url: r.url, events: [] }, `events required: a list of one or more of ${ALL}`],
      [{ url: r.url, events: ['topup.complete'] }, `unknown event type: topup.complete (one of ${ALL})`],
      [{ url: r.url, events: ['topup.completed'], secret: 'mine' }, 'unknown field: secret'],
      [{ url: `${r.url}/${'a'.repeat(2048)}`, events: ['topup.completed'] }, 'url too long (max 2048)'],
      [{ url: 'not a url', events: ['topup.completed'] }, 'url must be an absolute URL'],
      [{ url: 'ftp://127.0.0.1/x', events: ['topup.completed'] }, 'url must use https'],
      [{ url: 'http://93.184.216.34/hooks', events: ['topup.completed'] }, 'url must use https'],
      [{ url: 'https://user:pw@127.0.0.1/hooks', events: ['topup.completed'] }, 'url must not contain credentials'],
      // The gateway's endpoint guard, the same as for service calls: no private, link-local or metadata address.
      [{ url: 'https://10.0.0.7/hooks', events: ['topup.completed'] }, 'url resolves to a private or reserved address'],
      [{ url: 'https://169.254.169.254/latest/meta-data/', events: ['topup.completed'] }, 'url resolves to a private or reserved address'],
      [{ url: 'https://[::ffff:192.168.1.1]/hooks', events: ['topup.completed'] }, 'url resolves to a private or reserved address'],
      [{ url: 'https://metadata.google.internal/hooks', events: ['topup.completed'] }, 'url host is not allowed'],
      [{ url: `http://127.0.0.1:${gatewayPort}/v1/topup`, events: ['topup.completed'] }, 'url is the gateway itself'],
    ];
    for (const [body, error] of cases) {
      const res = await u.api('/v1/webhooks', { body });
      expect([res.status, res.body], JSON.stringify(body).slice(0, 80)).toEqual([400, { error, code: 'BAD_REQUEST' }]);
    }
    expect((await u.api('/v1/webhooks')).body).toEqual([]);
    expect((await h.gw.core.db.query('SELECT 1 FROM gw_webhook_endpoints WHERE account_id = $1', [u.id])).rows).toHaveLength(0);
  });

  it('keeps to 16 endpoints per account', async () => {
    const u = await h.user();
    const r = await receiver();
    for (let i = 0; i < 16; i++) await register(u, `${r.url}?n=${i}`);
    const refused = await u.api('/v1/webhooks', { body: { url: r.url, events: ['topup.completed'] } });
    expect([refused.status, refused.body]).toEqual([400, { error: 'too many webhook endpoints (max 16): delete one first', code: 'BAD_REQUEST' }]);
    expect((await u.api('/v1/webhooks')).body).toHaveLength(16);
  });

  it('refuses a spend key on every webhook operation, before anything is read or written', async () => {
    const u = await h.user();
    const r = await receiver();
    const mine = await register(u, r.url);
    const spendKey = (await u.api('/v1/api-keys', { body: { name: 'agent', kind: 'spend' } })).body.key as string;
    const asSpend = (path: string, init: { method?: string; body?: unknown } = {}) =>
      u.api(path, { ...init, headers: { authorization: `Bearer ${spendKey}` } });
    const refusal = {
      error:
        'this is a spend key: it may only call services, search the catalog and read its own balance, transactions and policy (GET /v1/me); use a manage key or the dashboard for this',
      code: 'CREDENTIAL_KIND',
    };
    for (const [method, path, body] of [
      ['GET', '/v1/webhooks', undefined],
      ['POST', '/v1/webhooks', { url: r.url, events: ['topup.completed'] }],
      ['DELETE', `/v1/webhooks/${mine.id}`, undefined],
      ['POST', `/v1/webhooks/${mine.id}/rotate-secret`, {}],
      ['POST', `/v1/webhooks/${mine.id}/ping`, {}],
      ['GET', `/v1/webhooks/${mine.id}/deliveries`, undefined],
      ['POST', `/v1/webhooks/${mine.id}/deliveries/dlv_x/redeliver`, {}],
    ] as const) {
      const res = await asSpend(path, { method, ...(body ? { body } : {}) });
      expect([res.status, res.body], `${method} ${path}`).toEqual([403, refusal]);
    }
    const list = (await u.api('/v1/webhooks')).body;
    expect(list).toEqual([expect.objectContaining({ id: mine.id, secret_prefix: mine.secret.slice(0, 10), rotated_at: null })]);
    expect(r.received).toHaveLength(0);
  });

  it("answers 404 for another account's endpoint and changes nothing", async () => {
    const owner = await h.user();
    const other = await h.user();
    const r = await receiver();
    const w = await register(owner, r.url);
    for (const [method, path] of [
      ['DELETE', `/v1/webhooks/${w.id}`],
      ['POST', `/v1/webhooks/${w.id}/rotate-secret`],
      ['POST', `/v1/webhooks/${w.id}/ping`],
      ['GET', `/v1/webhooks/${w.id}/deliveries`],
    ] as const) {
      const res = await other.api(path, { method, ...(method === 'POST' ? { body: {} } : {}) });
      expect([res.status, res.body], `${method} ${path}`).toEqual([404, { error: 'webhook not found', code: 'NOT_FOUND' }]);
    }
    expect((await owner.api('/v1/webhooks')).body).toEqual([expect.objectContaining({ id: w.id, rotated_at: null })]);
  });
});

describe('deliveries', () => {
  it('delivers a top-up signed with the endpoint secret: verified by the helper of @farebox/provider and @farebox/client', async () => {
    const u = await h.user();
    const r = await receiver();
    const w = await register(u, r.url);
    const topup = await u.api('/v1/topup', { body: { amount: 2 } });
    expect(topup.status).toBe(200);
    const got = await eventually('the top-up event is delivered', () => r.received[0]);
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.headers['farebox-event-type']).toBe('topup.completed');
    expect(got.headers['farebox-event-id']).toBe(got.json.id);
    expect(got.headers['farebox-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    const verdict = await verified(got, w.secret);
    expect(verdict).toMatchObject({ ok: true, event: { type: 'topup.completed' } });
    expect((await clientVerify({ payload: got.body, signature: got.headers['farebox-signature'] as string, secret: w.secret, now: clock.now })).ok).toBe(true);
    expect((await verified(got, 'whsec_someone_else')).ok).toBe(false);
    expect(got.json).toEqual({
      id: expect.stringMatching(/^evt_/),
      type: 'topup.completed',
      created_at: expect.any(String),
      data: {
        topup_id: topup.body.topup.id,
        amount_base_units: 20_000_000,
        amount_usd: 2,
        paid_with: null,
        tx_hash: null,
        explorer_url: null,
        balance_base_units: topup.body.balance_base_units,
        balance_usd: topup.body.balance_usd,
      },
    });
    const log = await eventually('the delivery is recorded', async () => (await deliveries(u, w.id)).find((d) => d.state === 'delivered'));
    expect(log).toMatchObject({
      webhook_id: w.id,
      event_id: got.json.id,
      event_type: 'topup.completed',
      attempts: 1,
      next_attempt_at: null,
      last_status: 200,
      last_error: null,
      redelivery_of: null,
      payload: got.json,
      log: [{ attempt: 1, status: 200, error: null, response: 'ok' }],
    });
    expect(r.received).toHaveLength(1);
  });

  it('sends only the subscribed types, to every endpoint subscribed', async () => {
    const u = await h.user();
    const a = await receiver();
    const b = await receiver();
    await register(u, a.url, ['topup.completed']);
    await register(u, b.url, ['settlement.released']);
    const c = await register(u, `${a.url}?second`, ['topup.completed', 'dispute.opened']);
    await u.api('/v1/topup', { body: { amount: 1 } });
    await eventually('both topup endpoints got it', () => a.received.length === 2);
    expect(a.received[0]!.json.id).toBe(a.received[1]!.json.id);
    expect(a.received[0]!.headers['farebox-delivery-id']).not.toBe(a.received[1]!.headers['farebox-delivery-id']);
    await h.gw.core.webhooks.worker.flush();
    expect(b.received).toHaveLength(0);
    expect((await deliveries(u, c.id)).map((d) => d.event_type)).toEqual(['topup.completed']);
  });

  it('retries a receiver that is down, with backoff, and delivers once when it is up', async () => {
    const u = await h.user();
    const port = await closedPort();
    const w = await register(u, `http://127.0.0.1:${port}/farebox-hooks`);
    await u.api('/v1/topup', { body: { amount: 1 } });
    const failed = await eventually('the first attempt failed', async () => (await deliveries(u, w.id)).find((d) => d.attempts === 1 && d.log.length === 1));
    expect(failed).toMatchObject({
      state: 'pending',
      last_status: null,
      last_error: 'connection refused',
      log: [{ attempt: 1, status: null, error: 'connection refused' }],
    });
    // The next attempt waits 30 s (then 1, 2, 4 minutes ... at most 8 hours, for a day).
    const wait = Date.parse(failed.next_attempt_at) - clock.now();
    expect(wait).toBeGreaterThan(20_000);
    expect(wait).toBeLessThanOrEqual(30_000);

    const r = await receiver(port);
    r.answer(503);
    clock.advance(31_000);
    await eventually(
      'the second attempt got the 503',
      async () => (await deliveries(u, w.id))[0].attempts === 2 && (await deliveries(u, w.id))[0].log.length === 2,
    );
    expect((await deliveries(u, w.id))[0]).toMatchObject({ state: 'pending', last_status: 503, last_error: 'status 503' });
    clock.advance(61_000);
    const done = await eventually('delivered on the third attempt', async () => (await deliveries(u, w.id)).find((d) => d.state === 'delivered'));
    expect(done.log.map((a: { status: number | null; error: string | null }) => [a.status, a.error])).toEqual([
      [null, 'connection refused'],
      [503, 'status 503'],
      [200, null],
    ]);
    // The receiver saw the event twice (503, then 200): the same event, the same bytes, a fresh signature each time.
    expect(r.received).toHaveLength(2);
    expect(r.received[0]!.body).toBe(r.received[1]!.body);
    expect((await verified(r.received[1]!, w.secret)).ok).toBe(true);
    // Nothing more is sent for it.
    clock.advance(3_600_000);
    await h.gw.core.webhooks.worker.flush();
    expect(r.received).toHaveLength(2);
  });

  it('gives up a day after the event: the delivery is failed, and can be redelivered', async () => {
    const u = await h.user();
    const port = await closedPort();
    const w = await register(u, `http://127.0.0.1:${port}/farebox-hooks`);
    await u.api('/v1/topup', { body: { amount: 1 } });
    await eventually('the first attempt failed', async () => (await deliveries(u, w.id))[0]?.log.length === 1);
    clock.advance(25 * 3_600_000);
    const failed = await eventually('failed after a day', async () => (await deliveries(u, w.id)).find((d) => d.state === 'failed'));
    expect(failed).toMatchObject({ attempts: 2, next_attempt_at: null, last_error: 'connection refused' });

    const r = await receiver(port);
    const again = await u.api(`/v1/webhooks/${w.id}/deliveries/${failed.id}/redeliver`, { body: {} });
    expect(again.status).toBe(201);
    expect(again.body).toMatchObject({ state: 'pending', attempts: 0, redelivery_of: failed.id, event_id: failed.event_id, log: [] });
    const got = await eventually('the redelivery arrives', () => r.received[0]);
    expect(got.json.id).toBe(failed.event_id);
    expect((await verified(got, w.secret)).ok).toBe(true);
    const log = await eventually('the redelivery is delivered', async () => {
      const list = await deliveries(u, w.id);
      return list[0].state === 'delivered' ? list : undefined;
    });
    expect(log.map((d: { id: string; state: string }) => [d.id, d.state])).toEqual([
      [again.body.id, 'delivered'],
      [failed.id, 'failed'],
    ]);
    const unknown = await u.api(`/v1/webhooks/${w.id}/deliveries/dlv_nope/redeliver`, { body: {} });
    expect([unknown.status, unknown.body]).toEqual([404, { error: 'delivery not found', code: 'NOT_FOUND' }]);
  });

  it('redelivers a delivered event: the same event and body, signed again', async () => {
    const u = await h.user();
    const r = await receiver();
    const w = await register(u, r.url);
    await u.api('/v1/topup', { body: { amount: 3 } });
    await eventually('delivered', async () => (await deliveries(u, w.id))[0]?.state === 'delivered');
    const [first] = await deliveries(u, w.id);
    const again = await session(u)(`/v1/webhooks/${w.id}/deliveries/${first.id}/redeliver`, { body: {} });
    expect(again.status).toBe(201);
    await eventually('the receiver got it twice', () => r.received.length === 2);
    expect(r.received[1]!.body).toBe(r.received[0]!.body);
    expect(r.received[1]!.headers['farebox-delivery-id']).toBe(again.body.id);
    expect((await verified(r.received[1]!, w.secret)).ok).toBe(true);
  });

  it('pings an endpoint, and rotates its secret: the old one stops at once, or signs too for the hours asked', async () => {
    const u = await h.user();
    const r = await receiver();
    const w = await register(u, r.url);
    const ping = await u.api(`/v1/webhooks/${w.id}/ping`, { body: {} });
    expect(ping.status).toBe(201);
    expect(ping.body).toMatchObject({ event_type: 'webhook.ping', state: 'pending', payload: { type: 'webhook.ping', data: { webhook_id: w.id } } });
    const first = await eventually('the ping arrives', () => r.received[0]);
    expect((await verified(first, w.secret)).ok).toBe(true);

    const rotated = await u.api(`/v1/webhooks/${w.id}/rotate-secret`, { body: {} });
    expect(rotated.status).toBe(200);
    expect(rotated.body).toMatchObject({
      id: w.id,
      secret: expect.stringMatching(/^whsec_/),
      rotated_at: expect.any(String),
      previous_secret_expires_at: null,
    });
    expect(rotated.body.secret).not.toBe(w.secret);
    await u.api(`/v1/webhooks/${w.id}/ping`, { body: {} });
    const second = await eventually('the second ping arrives', () => r.received[1]);
    expect((await verified(second, rotated.body.secret)).ok).toBe(true);
    expect(await verified(second, w.secret)).toMatchObject({ ok: false, reason: 'signature_mismatch' });

    const overlap = await u.api(`/v1/webhooks/${w.id}/rotate-secret`, { body: { expire_previous_in_hours: 24 } });
    expect(Date.parse(overlap.body.previous_secret_expires_at) - clock.now()).toBeGreaterThan(23.9 * 3_600_000);
    await u.api(`/v1/webhooks/${w.id}/ping`, { body: {} });
    const third = await eventually('the third ping arrives', () => r.received[2]);
    expect(third.headers['farebox-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect((await verified(third, overlap.body.secret)).ok).toBe(true);
    expect((await verified(third, rotated.body.secret)).ok).toBe(true);

    const bad = await u.api(`/v1/webhooks/${w.id}/rotate-secret`, { body: { expire_previous_in_hours: 200 } });
    expect([bad.status, bad.body]).toEqual([400, { error: 'expire_previous_in_hours must be a whole number from 0 to 168', code: 'BAD_REQUEST' }]);
    expect((await u.api('/v1/webhooks')).body[0].secret_prefix).toBe(overlap.body.secret.slice(0, 10));
  });

  it('deletes an endpoint: its pending deliveries are cancelled, and nothing more is sent to it', async () => {
    const u = await h.user();
    const port = await closedPort();
    const w = await register(u, `http://127.0.0.1:${port}/farebox-hooks`);
    await u.api('/v1/topup', { body: { amount: 1 } });
    await eventually('the first attempt failed', async () => (await deliveries(u, w.id))[0]?.log.length === 1);
    const removed = await u.api(`/v1/webhooks/${w.id}`, { method: 'DELETE' });
    expect([removed.status, removed.body]).toEqual([200, { id: w.id, deleted: true }]);
    const { rows } = await h.gw.core.db.query<{ state: string }>('SELECT state FROM gw_webhook_deliveries WHERE endpoint_id = $1', [w.id]);
    expect(rows.map((x) => x.state)).toEqual(['cancelled']);
    const r = await receiver(port);
    await u.api('/v1/topup', { body: { amount: 1 } });
    clock.advance(60_000);
    await h.gw.core.webhooks.worker.flush();
    expect(r.received).toHaveLength(0);
    expect((await u.api('/v1/webhooks')).body).toEqual([]);
    expect((await u.api(`/v1/webhooks/${w.id}`, { method: 'DELETE' })).status).toBe(404);
  });

  it('answers the delivery log newest first, with limit', async () => {
    const u = await h.user();
    const r = await receiver();
    const w = await register(u, r.url);
    for (const amount of [1, 2, 3]) await u.api('/v1/topup', { body: { amount } });
    await eventually('three delivered', async () => (await deliveries(u, w.id)).filter((d) => d.state === 'delivered').length === 3);
    const two = await u.api(`/v1/webhooks/${w.id}/deliveries?limit=2`);
    expect(two.body.map((d: any) => d.payload.data.amount_usd)).toEqual([3, 2]);
    const bad = await u.api(`/v1/webhooks/${w.id}/deliveries?limit=101`);
    expect([bad.status, bad.body]).toEqual([400, { error: 'invalid limit (must be 1 <= n <= 100)', code: 'BAD_REQUEST' }]);
  });
});
