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

async function ready(h: Harness) {
  const r = await fetch(`${h.url}/health/ready`);
  return { status: r.status, body: (await r.json()) as { ready: boolean; reasons: string[]; checks: Record<string, string> } };
}

/** /health/ready's answer once it is `status`. */
function becomes(h: Harness, status: number) {
  return eventually(
    `/health/ready answers ${status}`,
    async () => {
      const r = await ready(h);
      return r.status === status ? r : undefined;
    },
    { timeoutMs: 20_000, intervalMs: 100 },
  );
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
  }, 120_000);
  afterAll(async () => {
    await h?.close();
    redis?.kill('SIGKILL');
    await db?.stop();
  });

  it('is ready with every dependency up', async () => {
    expect(await ready(h)).toMatchObject({
      status: 200,
      body: { ready: true, reasons: [], checks: { database: 'ok', redis: 'ok', catalog: expect.any(String), rpc: expect.stringMatching(/^ledger \d+$/) } },
    });
  });

  it('answers 503 naming the database while PostgreSQL is unreachable, and 200 once it is back', async () => {
    await db.stop();
    const down = await becomes(h, 503);
    expect(down.status).toBe(503);
    expect(down.body.checks.database).toBe('down');
    expect(down.body.reasons.some((r) => r.startsWith('database: '))).toBe(true);
    await db.start();
    expect((await becomes(h, 200)).status).toBe(200);
  }, 60_000);

  it('answers 503 naming Redis while it is stopped, and 200 once it runs again', async () => {
    redis!.kill('SIGKILL');
    const down = await becomes(h, 503);
    expect(down.status).toBe(503);
    expect(down.body.checks).toMatchObject({ redis: 'down', database: 'ok' });
    expect(down.body.reasons.some((r) => r.startsWith('redis: '))).toBe(true);
    redis = await startRedis(redisPort);
    expect((await becomes(h, 200)).status).toBe(200);
  }, 60_000);
});
