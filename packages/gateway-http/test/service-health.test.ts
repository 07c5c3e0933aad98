import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '@farebox/protocol';
import { eventually } from '@farebox/test-kit';
import { startHttpStack, type HttpAccount, type HttpStack } from './kit.js';
import { startReceiver } from '@farebox/test-kit';

// Know a service before you pay it (docs/api.md, "Service health"; docs/search.md,
// "Health"): the gateway counts the paid calls that reach each service, shows the
// figures wherever a service is shown, and ranks a failing service below a working
// one of similar relevance. The owner's own calls and calls refused before the
// service are not counted.

describe('service health, measured where calls pass', () => {
  let h: HttpStack;
  let caller: HttpAccount;
  let broken = true;

  beforeAll(async () => {
    h = await startHttpStack();
    caller = await h.account();
    // 'weather' matches the query best (its name is the query), 'weather-now' a little less.
    await h.publish('weather', '0.001', () => {
      if (broken) throw new Error('upstream station offline');
      return { ok: true };
    });
    await h.publish('weather-now', '0.001', async () => ({ sunny: true }));
    await h.publish('weather-fresh', '0.001');
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  const call = (service: string, user = caller, headers: Record<string, string> = {}) => user.api('/v1/call', { body: { service, payload: {} }, headers });
  const agent = async (service: string) => (await caller.api(`/v1/agents/${service}`)).body;
  const searchOrder = async () =>
    ((await caller.api('/v1/agents?q=weather')).body as Array<{ service: string }>).map((s) => s.service).filter((s) => s.startsWith('weather'));

  it('every service starts new; relevance alone orders the search', async () => {
    for (const s of ['weather', 'weather-now', 'weather-fresh']) {
      expect(await agent(s)).toMatchObject({
        service: s,
        health: { status: 'new', windows: { '1h': { calls: 0, success_rate: null, p50_ms: null, p95_ms: null } }, last_failure: null },
      });
    }
    const order = await searchOrder();
    expect(order[0]).toBe('weather');
    expect(order.indexOf('weather')).toBeLessThan(order.indexOf('weather-now'));
  });

  it('counts answered and failed calls per window, with answer times and the last failure; a failing service sinks in search', async () => {
    for (let i = 0; i < 12; i++) {
      expect((await call('weather')).status).toBe(500);
      expect((await call('weather-now')).status).toBe(200);
    }
    // Refused before the service (its price is over the caller's Farebox-Max-Cost): not a call of the service.
    expect((await call('weather-now', caller, { 'farebox-max-cost': '0.0001' })).status).toBe(400);
    await h.core.serviceHealth.sync();

    const now = await agent('weather-now');
    expect(now.health).toMatchObject({ status: 'ok', last_failure: null });
    for (const w of ['1h', '24h', '7d'] as const) {
      expect(now.health.windows[w]).toMatchObject({ calls: 12, success_rate: 1 });
      expect(now.health.windows[w].p50_ms).toBeGreaterThanOrEqual(0);
      expect(now.health.windows[w].p95_ms).toBeGreaterThanOrEqual(now.health.windows[w].p50_ms);
    }
    const failing = await agent('weather');
    expect(failing.health).toMatchObject({ status: 'failing', windows: { '1h': { calls: 12, success_rate: 0 }, '24h': { calls: 12 } } });
    expect(failing.health.last_failure.reason).toMatch(/^service error 500: upstream station offline/);
    expect(Date.parse(failing.health.last_failure.at)).toBeGreaterThan(Date.now() - 60_000);
    expect((await agent('weather-fresh')).health.status).toBe('new');

    // The failing service, the more relevant one, now ranks below the working one; the new one keeps its relevance.
    const order = await searchOrder();
    expect(order.indexOf('weather-now')).toBeLessThan(order.indexOf('weather'));
    // The listing and the search carry the same health.
    const listed = ((await caller.api('/v1/agents')).body as Array<{ service: string; health: unknown }>).find((s) => s.service === 'weather');
    expect(listed?.health).toEqual(failing.health);
  });

  it('mends: once the service answers again, its 1-hour figures say so', async () => {
    broken = false;
    for (let i = 0; i < 12; i++) expect((await call('weather')).status).toBe(200);
    await h.core.serviceHealth.sync();
    const mended = (await agent('weather')).health;
    expect(mended.windows['1h']).toMatchObject({ calls: 24, success_rate: 0.5 });
    expect(mended.status).toBe('degraded');
  });

  it("leaves the owner's own calls out", async () => {
    const pub = await h.account();
    await pub.api('/v1/publisher/activate', { body: { name: 'Self Caller' } });
    const wallet = (await pub.api('/v1/me')).body.custodial_wallet as string;
    const backend = await h.serve('selfie', '0.001', wallet);
    expect(
      (await pub.api('/v1/agents', { body: { service: 'selfie', pricePerCallLamports: 10_000, endpoint: backend.endpoint, description: 'mine' } })).status,
    ).toBe(201);
    for (let i = 0; i < 5; i++) expect((await call('selfie', pub)).status).toBe(200);
    expect((await call('selfie')).status).toBe(200);
    await h.core.serviceHealth.sync();
    expect((await agent('selfie')).health.windows['1h'].calls).toBe(1);
  });

  it("tells the owner's account when its service's status changes: service.health_changed, signed, once", async () => {
    const pub = await h.account();
    await pub.api('/v1/publisher/activate', { body: { name: 'Hooked Weather' } });
    const receiver = await startReceiver();
    try {
      const hook = await pub.api('/v1/webhooks', { body: { url: receiver.url, events: ['service.health_changed'] } });
      expect(hook.status).toBe(201);
      // Its endpoint refuses connections: every call fails and is refunded.
      expect(
        (await pub.api('/v1/agents', { body: { service: 'hook-down', pricePerCallLamports: 10_000, endpoint: 'http://127.0.0.1:9/', description: 'down' } }))
          .status,
      ).toBe(201);
      for (let i = 0; i < 10; i++) expect((await call('hook-down')).status).toBe(500);
      await h.core.serviceHealth.sync();
      const got = await eventually('service.health_changed arrives', () => receiver.received.find((r) => r.json.type === 'service.health_changed'));
      expect(got.json.data).toMatchObject({
        service: 'hook-down',
        from: 'new',
        to: 'failing',
        health: { status: 'failing', windows: { '1h': { calls: 10 } } },
      });
      expect((await verifyWebhook({ payload: got.body, signature: got.headers['farebox-signature'] as string, secret: hook.body.secret as string })).ok).toBe(
        true,
      );
      // Read again (and by every gateway): the stored status is the same, no second event.
      await h.core.serviceHealth.sync();
      await new Promise((r) => setTimeout(r, 500));
      expect(receiver.received.filter((r) => r.json.type === 'service.health_changed')).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });

  it('a chart of the last 24 hours per hour, and the feed the discovery backend reads, without a credential', async () => {
    const series = await caller.api('/v1/agents/weather-now/health?window=24h');
    expect(series.status).toBe(200);
    expect(series.body).toMatchObject({ service: 'weather-now', window: '24h', health: { status: 'ok' } });
    expect(series.body.points).toHaveLength(24);
    expect(series.body.points.at(-1)).toMatchObject({ calls: 12, success_rate: 1 });
    expect(series.body.points.slice(0, -1).every((p: { calls: number }) => p.calls === 0)).toBe(true);
    expect((await caller.api('/v1/agents/weather-now/health?window=7d')).body.points).toHaveLength(28);
    expect(await caller.api('/v1/agents/weather-now/health?window=1y')).toMatchObject({ status: 400, body: { error: 'window must be 24h or 7d' } });
    expect((await caller.api('/v1/agents/no-such-service/health')).status).toBe(404);
    expect((await caller.api('/v1/agents/no-such-service')).status).toBe(404);

    const feed = await h.fetch('/discovery/health');
    expect(feed.status).toBe(200);
    const body = (await feed.json()) as { services: Record<string, { status: string }> };
    expect(body.services['weather-now']?.status).toBe('ok');
    expect(body.services['weather']?.status).toBe('degraded');
    expect(body.services['weather-fresh']).toBeUndefined();
  });
});
