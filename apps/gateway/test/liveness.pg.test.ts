// Two gateways on one PostgreSQL database; one is killed (SIGKILL) with calls
// in flight. The survivor voids the dead gateway's holds and ends its
// idempotency leases within seconds, whatever the call timeout (30 s here:
// holds time out after 90 s), so a retry under the same key runs on the
// survivor and is charged once.
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair } from '@stellar/stellar-sdk';
import { startDevnet, type Devnet } from '@farebox/devnet';
import { createRegistryClient, keypairSigner } from '@farebox/stellar';
import { eventually } from '@farebox/test-kit';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../src/index.js';
import { freePort, spawnGateway, type GatewayProcess } from './process-kit.js';

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const PRICE = 1_000_000;
const SIGNUP = 50_000_000;
/** Short beats so that the scenario is quick; the bound asserted is the issue's 15 s. */
const LIVENESS = { intervalMs: 1_000, timeoutMs: 5_000 };

describe('a gateway killed with calls in flight, beside another on the same PostgreSQL', () => {
  const schema = `liveness_${process.pid}_${Date.now()}`;
  let devnet: Devnet | undefined;
  let survivor: RunningGateway | undefined;
  let dead: GatewayProcess | undefined;
  let service: Server | undefined;
  afterAll(async () => {
    dead?.child.kill('SIGKILL');
    service?.closeAllConnections();
    service?.close();
    await survivor?.close();
    await devnet?.close();
    const admin = new pg.Client({ connectionString: DATABASE_URL });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  });

  it('has its holds voided and its leases ended by the survivor within 15 s; the same key then runs there once', async () => {
    devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant' });
    const keystoreKey = randomBytes(32).toString('hex');
    survivor = await startGateway({
      port: 0,
      network: 'local',
      allowLoopbackEndpoints: true,
      logLevel: 'warn',
      dataDir: await mkdtemp(join(tmpdir(), 'farebox-live-b-')),
      databaseUrl: DATABASE_URL,
      databaseSchema: schema,
      devnetUrl: devnet.url,
      embedDevnet: false,
      rateLimits: { authPerMinute: 1000 },
      livenessIntervalMs: LIVENESS.intervalMs,
      livenessTimeoutMs: LIVENESS.timeoutMs,
      env: { FAREBOX_KEYSTORE_KEY: keystoreKey },
    });
    dead = spawnGateway({
      PORT: String(await freePort()),
      FAREBOX_DATA_DIR: await mkdtemp(join(tmpdir(), 'farebox-live-a-')),
      DATABASE_URL: `${DATABASE_URL}${DATABASE_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`,
      FAREBOX_KEYSTORE_KEY: keystoreKey,
      FAREBOX_DEVNET_URL: devnet.url,
      FAREBOX_ALLOW_LOOPBACK_ENDPOINTS: 'true',
      FAREBOX_AUTH_RATE_LIMIT: '1000',
      FAREBOX_LOG_LEVEL: 'warn',
      FAREBOX_LIVENESS_INTERVAL_MS: String(LIVENESS.intervalMs),
      FAREBOX_LIVENESS_TIMEOUT_MS: String(LIVENESS.timeoutMs),
    });
    const deadUrl = await dead.started;
    const liveUrl = survivor.url;

    // The service leaves every call hanging until the gateway dies, then answers at once.
    let hang = true;
    let arrived = 0;
    service = createServer((req, res) => {
      req.resume();
      if (hang) arrived++;
      else req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
    });
    await new Promise<void>((r) => service!.listen(0, '127.0.0.1', r));
    const owner = Keypair.random();
    await devnet.friendbot(owner.publicKey());
    await createRegistryClient(survivor.core.network).register(keypairSigner(owner.secret()), {
      service: 'hangs',
      pricePerCall: BigInt(PRICE),
      endpoint: `http://127.0.0.1:${(service.address() as AddressInfo).port}/`,
      description: 'hangs until its caller dies',
    });
    await survivor.core.mirror.syncOnce();

    const signup = await fetch(`${liveUrl}/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'liveness@example.com', password: 'liveness test password' }),
    });
    const cookie = signup.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const { csrf_token } = (await signup.json()) as { csrf_token: string };
    const { key } = (await (
      await fetch(`${liveUrl}/v1/api-keys`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrf_token },
        body: JSON.stringify({ name: 'k' }),
      })
    ).json()) as { key: string };
    const auth = { authorization: `Bearer ${key}` };
    const call = (base: string, idempotencyKey?: string) =>
      fetch(`${base}/v1/call`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json', ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}) },
        body: JSON.stringify({ service: 'hangs', payload: {} }),
      });
    const balance = async () => ((await (await fetch(`${liveUrl}/v1/balance`, { headers: auth })).json()) as { balance_base_units: number }).balance_base_units;
    await eventually('the gateway to be killed lists the service', async () =>
      ((await (await fetch(`${deadUrl}/v1/agents`, { headers: auth })).json()) as Array<{ service: string }>).some((s) => s.service === 'hangs'),
    );

    // Four key-less calls and one under a key, all held and waiting on the service.
    const inFlight = [...Array.from({ length: 4 }, () => call(deadUrl)), call(deadUrl, 'k-dead')].map((p) => p.catch((e: unknown) => e));
    await eventually('the service has every call', () => arrived === 5);
    expect(await balance()).toBe(SIGNUP - 5 * PRICE);
    // While its gateway runs, the key's retry elsewhere is refused with the seconds its lease has left.
    const early = await call(liveUrl, 'k-dead');
    expect(early.status).toBe(409);
    expect(await early.json()).toMatchObject({ error: 'a request with this idempotency key is still in progress', code: 'CONFLICT' });
    expect(Number(early.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(early.headers.get('retry-after'))).toBeLessThanOrEqual(60);

    dead.child.kill('SIGKILL');
    await dead.exited;
    await Promise.all(inFlight);
    hang = false;

    // Within 15 s of the death the lease is ended (after the holds are voided): the retry runs on the survivor.
    const retried = await eventually(
      'the survivor gives back what the dead gateway held, and the same key runs there',
      async () => {
        const r = await call(liveUrl, 'k-dead');
        if (r.status === 409) return undefined;
        return { status: r.status, body: (await r.json()) as { callId: string } };
      },
      { timeoutMs: 15_000, intervalMs: 200 },
    );
    expect(retried.status).toBe(200);
    const txs = (await (await fetch(`${liveUrl}/v1/transactions?limit=50`, { headers: auth })).json()) as Array<{ type: string; status: string }>;
    const calls = txs.filter((t) => t.type === 'call');
    expect(calls.filter((t) => t.status === 'refunded')).toHaveLength(5);
    expect(calls.filter((t) => t.status === 'completed')).toHaveLength(1);
    expect(calls.filter((t) => t.status === 'pending')).toHaveLength(0);
    expect(await balance()).toBe(SIGNUP - PRICE);
    // Charged once: the key answers the same call again.
    const again = await call(liveUrl, 'k-dead');
    expect(again.status).toBe(200);
    expect(((await again.json()) as { callId: string }).callId).toBe(retried.body.callId);
    expect(await balance()).toBe(SIGNUP - PRICE);
    expect((await survivor.core.ledger.verify()).mismatches).toEqual([]);
  }, 180_000);
});
