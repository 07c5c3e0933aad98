import { readFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@farebox/gateway-core';
import { startDevnetForSettlement, startStack, type Stack } from './settlement-kit.js';
import { startProxy, type TcpProxy } from './proxy-kit.js';
import { eventually, testClock } from '@farebox/test-kit';

const TOKEN = 'metrics-token-0123456789';

let s: Stack;
let rpcProxy: TcpProxy;
/** The gateway's clock: the readiness test moves it past the catalog's staleness and the latest-ledger cache. */
const clock = testClock();
const lines: string[] = [];
const seen: IncomingHttpHeaders[] = [];
let raw: Server;

/** The value of one series in a Prometheus text exposition (0 when absent). */
function value(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

async function scrape(token = TOKEN) {
  return fetch(`${s.url}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
}

const logged = () => lines.map((l) => JSON.parse(l) as Record<string, any>);

beforeAll(async () => {
  const devnet = await startDevnetForSettlement();
  rpcProxy = await startProxy({ port: Number(new URL(devnet.url).port) });
  s = await startStack({
    devnet,
    gateway: {
      devnetUrl: `http://127.0.0.1:${rpcProxy.port}`,
      metricsToken: TOKEN,
      catalogStaleMs: 1_000,
      now: clock.now,
      rateLimits: { authPerMinute: 10_000, accountPerMinute: 100_000, anonymousPerMinute: 3 },
      logger: createLogger({ level: 'info', destination: { write: (l: string) => void lines.push(l) } }),
    },
  });
  // A service that shows what the gateway sends it.
  raw = createServer((req, res) => {
    seen.push(req.headers);
    req.resume().on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
  });
  await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
}, 60_000);
afterAll(async () => {
  await new Promise((r) => raw?.close(r));
  await s?.close();
  await s?.devnet.close();
});

describe('request ids', () => {
  it('echoes a well-formed X-Request-Id, makes one otherwise, and hands the caller’s to the service', async () => {
    expect((await fetch(`${s.url}/health`, { headers: { 'x-request-id': 'trace-42.a:b' } })).headers.get('x-request-id')).toBe('trace-42.a:b');
    const made = (await fetch(`${s.url}/health`)).headers.get('x-request-id');
    expect(made).toMatch(/^[0-9a-f-]{36}$/);
    for (const bad of ['has spaces', 'x'.repeat(129), 'quote"s']) {
      const id = (await fetch(`${s.url}/health`, { headers: { 'x-request-id': bad } })).headers.get('x-request-id');
      expect(id).not.toBe(bad);
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
    }

    const u = await s.user();
    const { owner } = await registerRaw('traced', `http://127.0.0.1:${(raw.address() as AddressInfo).port}/`);
    expect(owner).toMatch(/^G/);
    const r = await fetch(`${s.url}/v1/call`, {
      method: 'POST',
      headers: { authorization: `Bearer ${u.key}`, 'content-type': 'application/json', 'x-request-id': 'call-trace-1' },
      body: JSON.stringify({ service: 'traced', payload: { n: 1 } }),
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-request-id')).toBe('call-trace-1');
    const callId = ((await r.json()) as { callId: string }).callId;
    expect(seen.at(-1)?.['x-request-id']).toBe('call-trace-1');
    expect(seen.at(-1)?.['farebox-call-id']).toBe(callId);

    // The request's line and the call's line share the id; the call's line has each step's time.
    // Both lines are written once the answer is on its way: they may come just after it.
    const entries = await eventually('the request and call lines are both written', () => {
      const lines = logged().filter((e) => e.reqId === 'call-trace-1');
      return lines.some((e) => e.event === 'call') && lines.some((e) => e.event === 'request') ? lines : undefined;
    });
    const call = entries.find((e) => e.event === 'call');
    expect(entries.find((e) => e.event === 'request')).toMatchObject({ method: 'POST', route: '/v1/call', status: 200, principal: 'api_key', accountId: u.id });
    expect(call).toMatchObject({ callId, service: 'traced', outcome: 'ok', paidWith: 'credit', status: 200, accountId: u.id });
    expect(Object.keys(call!.steps)).toEqual(expect.arrayContaining(['resolve_service', 'hold_credits', 'call_service', 'post_payment']));
  });
});

async function registerRaw(name: string, endpoint: string): Promise<{ owner: string }> {
  const { Keypair } = await import('@stellar/stellar-sdk');
  const { keypairSigner } = await import('@farebox/stellar');
  const kp = Keypair.random();
  await s.devnet.friendbot(kp.publicKey());
  await s.gw.core.registry.register(keypairSigner(kp.secret()), { service: name, pricePerCall: 100_000n, endpoint, description: `raw ${name}` });
  await s.gw.core.mirror.syncOnce();
  return { owner: kp.publicKey() };
}

describe('metrics', () => {
  it('need the bearer token', async () => {
    expect((await scrape('')).status).toBe(401);
    expect((await scrape('wrong-token-wrong-token')).status).toBe(401);
    const ok = await scrape();
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toContain('text/plain');
  });

  it('move with real traffic: calls by outcome, step latencies, holds, rate-limit refusals, settlement cycles', async () => {
    const before = await (await scrape()).text();
    const u = await s.user();
    const { owner } = await s.publish('metered', '0.01');
    for (let i = 0; i < 3; i++) expect((await u.api('/v1/call', { body: { service: 'metered', payload: { i } } })).status).toBe(200);
    const down = await s.publish('metered-down', '0.01', () => {
      throw new Error('down');
    });
    expect(down.owner).toMatch(/^G/);
    expect((await u.api('/v1/call', { body: { service: 'metered-down', payload: {} } })).status).toBe(500);
    for (let i = 0; i < 5; i++) await fetch(`${s.url}/v1/me`);
    await s.gw.core.settlement.settle(owner);
    // One log line per settlement step of that publisher's cycle, to done.
    const steps = logged().filter((e) => e.event === 'settlement' && e.owner === owner);
    expect(steps.map((e) => e.to)).toEqual(expect.arrayContaining(['closing', 'deployed', 'funded', 'released', 'done']));
    expect(steps.find((e) => e.to === 'deployed')?.txHash).toMatch(/^[0-9a-f]{64}$/);

    const after = await (await scrape()).text();
    const delta = (series: string) => value(after, series) - value(before, series);
    expect(delta('farebox_calls_total{outcome="ok",paid_with="credit"}')).toBe(3);
    expect(delta('farebox_calls_total{outcome="refunded",paid_with="none"}')).toBe(1);
    for (const step of ['hold', 'service', 'post', 'total'])
      expect(delta(`farebox_call_step_duration_seconds_count{step="${step}"}`)).toBeGreaterThanOrEqual(step === 'post' ? 3 : 4);
    expect(delta('farebox_http_requests_total{route="/v1/call",method="POST",status="200"}')).toBe(3);
    expect(delta('farebox_rate_limited_total{rule="anon-ip"}')).toBeGreaterThanOrEqual(2);
    expect(value(after, 'farebox_settlement_cycles{state="done"}')).toBeGreaterThanOrEqual(1);
    expect(after).toContain('farebox_holds_pending 0');
    expect(after).toMatch(/farebox_search_mode\{mode="keyword-only"\} 1/);
    expect(value(after, 'farebox_search_documents')).toBeGreaterThanOrEqual(2);
    expect(after).toMatch(/farebox_db_pool_connections\{state="total"\} \d+/);
    expect(after).toMatch(/farebox_treasury_usdc_base_units \d+/);
    expect(after).toMatch(/farebox_catalog_lag_ledgers \d+/);
  });

  it('include every metric that docs/operations.md and the sample Grafana dashboard use', async () => {
    const text = await (await scrape()).text();
    const exposed = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
    const docs = await Promise.all(['operations.md', 'grafana-dashboard.json'].map((f) => readFile(new URL(`../../../docs/${f}`, import.meta.url), 'utf8')));
    // The x402 facilitator's refusal reasons (the table rows of docs/protocol.md) are named like metrics but are not.
    const protocol = await readFile(new URL('../../../docs/protocol.md', import.meta.url), 'utf8');
    const reasons = new Set([...protocol.matchAll(/^\| `(farebox_[a-z0-9_]+)` \|/gm)].map((m) => m[1]!));
    const named = new Set(
      docs
        .flatMap((d) => [...d.matchAll(/farebox_[a-z0-9_]+/g)].map((m) => m[0].replace(/_(bucket|count|sum)$/, '')))
        .filter((n) => n !== 'farebox_process_' && !reasons.has(n)),
    );
    expect(reasons.has('farebox_fee_bound_reached')).toBe(true);
    expect(named.size).toBeGreaterThan(20);
    expect([...named].filter((n) => !exposed.has(n))).toEqual([]);
    JSON.parse(docs[1]!);
  });
});

describe('/health/ready', () => {
  it('stays ready while the network’s RPC and Horizon (and so the catalog) are gone, naming each degraded with its effect, and ok again once they are back', async () => {
    const ready = await fetch(`${s.url}/health/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({
      ready: true,
      status: 'ok',
      reasons: [],
      checks: { database: 'ok', rpc: expect.stringMatching(/^ledger \d+$/) },
      dependencies: { database: { state: 'up', required: true }, rpc: { state: 'up', required: false } },
    });

    await rpcProxy.stop();
    // Once the mirror has found the RPC gone (a sync in flight at the stop may still have landed)...
    await eventually('the catalog mirror fails to reach the RPC', () => s.gw.core.mirror.status().failures > 0);
    // ...the gateway's clock moves past the catalog's staleness (1 s), the 2 s the network's latest ledger is kept
    // and the 10 s between two balance reads from Horizon.
    clock.advance(10_100);
    const down = await fetch(`${s.url}/health/ready`);
    // Calls paid with credits need neither: the gateway stays in the load balancer's pool.
    expect(down.status).toBe(200);
    const body = (await down.json()) as {
      ready: boolean;
      status: string;
      reasons: string[];
      checks: Record<string, string>;
      dependencies: Record<string, any>;
    };
    expect(body).toMatchObject({
      ready: true,
      status: 'degraded',
      reasons: [],
      checks: { database: 'ok', rpc: 'down', horizon: 'down', catalog: 'down' },
      dependencies: { rpc: { state: 'down', required: false }, horizon: { state: 'down', required: false }, catalog: { state: 'down', required: false } },
    });
    expect(body.dependencies.horizon.effect).toMatch(/^wallet balances, wallet set-up, paid top-ups and the wallet-credit audit wait and are retried/);
    expect(body.dependencies.catalog.reason).toMatch(/^last synced/);
    expect(body.dependencies.rpc.effect).toMatch(/calls paid with credits go on/);
    // /health stays the cheap answer.
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
    const text = await (await scrape()).text();
    expect(value(text, 'farebox_dependency_up{dependency="rpc"}')).toBe(0);
    expect(value(text, 'farebox_dependency_transitions_total{dependency="rpc",to="down"}')).toBe(1);
    expect(value(text, 'farebox_dependency_up{dependency="horizon"}')).toBe(0);

    await rpcProxy.start();
    await eventually(
      '/health/ready answers ok again',
      async () => ((await (await fetch(`${s.url}/health/ready`)).json()) as { status: string }).status === 'ok',
      { timeoutMs: 20_000, intervalMs: 100 },
    );
    // One warn line when each went, one info line when it came back.
    for (const dependency of ['rpc', 'horizon'])
      expect(
        logged()
          .filter((l) => l.event === 'dependency' && l.dependency === dependency)
          .map((l) => [l.level, l.state]),
        dependency,
      ).toEqual([
        ['warn', 'down'],
        ['info', 'up'],
      ]);
    expect(value(await (await scrape()).text(), 'farebox_dependency_transitions_total{dependency="horizon",to="up"}')).toBe(1);
  }, 60_000);
});

describe('logs', () => {
  it('are JSON lines with request ids, and carry none of the secrets the test created', async () => {
    const u = await s.user();
    await u.api('/v1/balance');
    const entries = logged();
    expect(entries.length).toBeGreaterThan(10);
    for (const e of entries) expect(typeof e.level).toBe('string');
    const requests = entries.filter((e) => e.event === 'request');
    expect(requests.length).toBeGreaterThan(5);
    for (const r of requests) expect(r.reqId).toMatch(/\S/);
    const text = lines.join('\n');
    for (const secret of [u.key, ...u.cookie.split('; ').map((c) => c.split('=')[1]!), TOKEN]) expect(text).not.toContain(secret);
  });
});
