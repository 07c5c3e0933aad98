import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from './harness.js';
import { freePort } from './process-kit.js';
import { startProxy, type TcpProxy } from './proxy-kit.js';
import { eventually } from '@farebox/test-kit';

// /health/ready against the real servers: PostgreSQL behind a TCP proxy the
// test can cut, and a Redis server of the test's own that it stops and starts.

const DATABASE_URL = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test');

function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      if (/Ready to accept connections/.test(out)) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${out}`)));
  });
}

interface ReadyBody {
  ready: boolean;
  status: string;
  reasons: string[];
  checks: Record<string, string>;
  dependencies: Record<string, { state: string; required: boolean; since: string | null; reason?: string; effect?: string }>;
}

async function ready(h: Harness) {
  const r = await fetch(`${h.url}/health/ready`);
  return { status: r.status, body: (await r.json()) as ReadyBody };
}

/** /health/ready's answer once `pass` holds for it. */
function becomes(h: Harness, what: string, pass: (r: { status: number; body: ReadyBody }) => boolean) {
  return eventually(
    `/health/ready ${what}`,
    async () => {
      const r = await ready(h);
      return pass(r) ? r : undefined;
    },
    { timeoutMs: 20_000, intervalMs: 100 },
  );
}

/** The gateway's `event: "dependency"` log lines for `name`, as [level, state]. */
const transitions = (h: Harness, name: string) =>
  h
    .logs()
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.event === 'dependency' && l.dependency === name)
    .map((l) => [l.level, l.state]);

/** One sample of the gateway's metrics. */
async function metric(h: Harness, line: string): Promise<number | undefined> {
  const text = await h.gw.core.metrics.registry.metrics();
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}

describe('/health/ready with PostgreSQL and Redis', () => {
  let h: Harness;
  let db: TcpProxy;
  let redis: ChildProcess | undefined;
  let redisPort: number;

  beforeAll(async () => {
    db = await startProxy({ host: DATABASE_URL.hostname, port: Number(DATABASE_URL.port || 5432) });
    redisPort = await freePort();
    redis = await startRedis(redisPort);
    const url = new URL(DATABASE_URL);
    url.hostname = '127.0.0.1';
    url.port = String(db.port);
    h = await startHarness('postgres', { databaseUrl: url.toString(), env: { FAREBOX_REDIS_URL: `redis://127.0.0.1:${redisPort}` } });
    await h.publish('ready-steady', { price: '0.01' });
  }, 120_000);
  afterAll(async () => {
    await h?.close();
    redis?.kill('SIGKILL');
    await db?.stop();
  });

  it('is ready with every dependency up', async () => {
    const up = { state: 'up', since: expect.any(String) };
    expect(await ready(h)).toMatchObject({
      status: 200,
      body: {
        ready: true,
        status: 'ok',
        reasons: [],
        checks: { database: 'ok', redis: 'ok', catalog: expect.any(String), rpc: expect.stringMatching(/^ledger \d+$/), horizon: 'ok' },
        dependencies: {
          database: { ...up, required: true },
          redis: { ...up, required: false },
          rpc: { ...up, required: false },
          horizon: { ...up, required: false },
          catalog: { ...up, required: false },
        },
      },
    });
  });

  it('answers 503 naming the database while PostgreSQL is unreachable, and 200 once it is back', async () => {
    await db.stop();
    const down = await becomes(h, 'answers 503', (r) => r.status === 503);
    expect(down.body).toMatchObject({
      ready: false,
      status: 'down',
      checks: { database: 'down' },
      dependencies: { database: { state: 'down', required: true } },
    });
    expect(down.body.dependencies.database!.effect).toMatch(/503/);
    expect(down.body.reasons.some((r) => r.startsWith('database: '))).toBe(true);
    await db.start();
    expect((await becomes(h, 'answers 200', (r) => r.status === 200)).body.dependencies.database!.state).toBe('up');
    expect(transitions(h, 'database')).toEqual([
      ['warn', 'down'],
      ['info', 'up'],
    ]);
  }, 60_000);

  it('stays ready while Redis is stopped, naming it degraded with its effect; one warn line, then one info line when it is back', async () => {
    const u = await h.user();
    redis!.kill('SIGKILL');
    const degraded = await becomes(h, 'names Redis down', (r) => r.body.dependencies.redis?.state === 'down');
    expect(degraded).toMatchObject({
      status: 200,
      body: {
        ready: true,
        status: 'degraded',
        reasons: [],
        checks: { redis: 'down', database: 'ok' },
        dependencies: { redis: { state: 'down', required: false } },
      },
    });
    expect(degraded.body.dependencies.redis!.effect).toMatch(/^rate limits are not enforced/);
    expect(await metric(h, 'farebox_dependency_up{dependency="redis"}')).toBe(0);
    // Calls go on (rate limits fall back), and readiness stays 200 while Redis is away.
    for (let i = 0; i < 3; i++) {
      expect((await u.api('/v1/call', { body: { service: 'ready-steady', payload: {} } })).status).toBe(200);
      expect((await ready(h)).status).toBe(200);
    }
    redis = await startRedis(redisPort);
    const back = await becomes(h, 'names Redis up again', (r) => r.body.dependencies.redis?.state === 'up');
    expect(back).toMatchObject({ status: 200, body: { ready: true, status: 'ok' } });
    expect(transitions(h, 'redis')).toEqual([
      ['warn', 'down'],
      ['info', 'up'],
    ]);
    expect(await metric(h, 'farebox_dependency_up{dependency="redis"}')).toBe(1);
    expect(await metric(h, 'farebox_dependency_transitions_total{dependency="redis",to="down"}')).toBe(1);
    expect(await metric(h, 'farebox_dependency_transitions_total{dependency="redis",to="up"}')).toBe(1);
  }, 60_000);

  it('answers 503 for Redis when FAREBOX_READY_REQUIRES names it', async () => {
    const strict = await startHarness('postgres', {
      env: { FAREBOX_REDIS_URL: `redis://127.0.0.1:${redisPort}`, FAREBOX_READY_REQUIRES: 'redis' },
    });
    try {
      expect((await ready(strict)).body.dependencies.redis).toMatchObject({ state: 'up', required: true });
      redis!.kill('SIGKILL');
      const down = await becomes(strict, 'answers 503', (r) => r.status === 503);
      expect(down.body).toMatchObject({ ready: false, status: 'down', dependencies: { redis: { state: 'down', required: true } } });
      expect(down.body.reasons.some((r) => r.startsWith('redis: '))).toBe(true);
      redis = await startRedis(redisPort);
      await becomes(strict, 'answers 200', (r) => r.status === 200);
    } finally {
      await strict.close();
    }
  }, 120_000);
});
