import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair } from '@stellar/stellar-sdk';
import { startDevnet, type Devnet } from '@farebox/devnet';
import { createProvider } from '@farebox/provider';
import { createRegistryClient, keypairSigner } from '@farebox/stellar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../src/index.js';
import { dropTestSchema } from './harness.js';
import { eventually } from '@farebox/test-kit';

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('two gateways on one PostgreSQL, Redis and devnet', () => {
  let devnet: Devnet;
  const gws: RunningGateway[] = [];
  let closeService: (() => Promise<void>) | undefined;
  const schema = `scale_${process.pid}_${Date.now()}`;

  beforeAll(async () => {
    devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant' });
    const env = { FAREBOX_KEYSTORE_KEY: randomBytes(32).toString('hex'), FAREBOX_REDIS_URL: REDIS_URL };
    for (let i = 0; i < 2; i++) {
      gws.push(
        await startGateway({
          port: 0,
          network: 'local',
          // The test services listen on 127.0.0.1.
          allowLoopbackEndpoints: true,
          // Warnings and errors only: the tests read their answers, not the access log.
          logLevel: 'warn',
          dataDir: await mkdtemp(join(tmpdir(), `farebox-scale-${i}-`)),
          databaseUrl: DATABASE_URL,
          databaseSchema: schema,
          devnetUrl: devnet.url,
          embedDevnet: false,
          rateLimits: { authPerMinute: 1000 },
          // Long enough that only the Redis broadcast can explain a change seen within seconds.
          credentialCacheMs: 60_000,
          env,
        }),
      );
    }
    const owner = Keypair.random();
    await devnet.friendbot(owner.publicKey());
    const registry = createRegistryClient(gws[0]!.core.network);
    const provider = createProvider({
      service: 'shared',
      pricePerCall: '0.1',
      network: 'local',
      platform: { publicKey: gws[0]!.core.platformPublicKey },
      wallet: { secret: owner.secret() },
      registry,
      env: { FAREBOX_DEVNET_URL: devnet.url },
    }).serve(() => ({ ok: true }));
    const listening = await provider.listen(0, '127.0.0.1');
    closeService = () => provider.close();
    await registry.register(keypairSigner(owner.secret()), {
      service: 'shared',
      pricePerCall: 1_000_000n,
      endpoint: `${listening.url}/`,
      description: 'shared',
    });
    for (const gw of gws) await gw.core.mirror.syncOnce();
  }, 180_000);

  afterAll(async () => {
    await closeService?.();
    for (const gw of gws) await gw.close();
    await devnet?.close();
    await dropTestSchema(schema, DATABASE_URL);
  });

  it('share one platform key and treasury', () => {
    expect(gws[0]!.core.platformPublicKey).toBe(gws[1]!.core.platformPublicKey);
    expect(gws[0]!.core.treasuryAddress).toBe(gws[1]!.core.treasuryAddress);
  });

  it('share sessions, API keys and wallets, and keep money exact when calls are split across both', async () => {
    const [a, b] = gws as [RunningGateway, RunningGateway];
    const signup = await fetch(`${a.url}/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'scale@example.com', password: 'scale password' }),
    });
    expect(signup.status).toBe(201);
    const account = (await signup.json()) as { custodial_wallet: string; csrf_token: string };
    const cookie = signup.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    // The session cookie from gateway A works on gateway B, CSRF token included.
    const created = await fetch(`${b.url}/v1/api-keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': account.csrf_token },
      body: JSON.stringify({ name: 'k' }),
    });
    expect(created.status).toBe(201);
    const { key } = (await created.json()) as { key: string };
    const meOnA = (await (await fetch(`${a.url}/v1/me`, { headers: { authorization: `Bearer ${key}` } })).json()) as { custodial_wallet: string };
    expect(meOnA.custodial_wallet).toBe(account.custodial_wallet);

    // 5 USD of credit, 0.1 per call: 50 of 120 calls spread over both gateways succeed.
    const results = await Promise.all(
      Array.from({ length: 120 }, (_, i) =>
        fetch(`${(i % 2 ? a : b).url}/v1/call`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ service: 'shared', payload: { i } }),
        }),
      ),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(50);
    expect(statuses.filter((s) => s !== 200).every((s) => s === 402)).toBe(true);
    const balance = (await (await fetch(`${b.url}/v1/balance`, { headers: { authorization: `Bearer ${key}` } })).json()) as { balance_base_units: number };
    expect(balance.balance_base_units).toBe(0);
    expect((await a.core.ledger.verify()).ok).toBe(true);
    const health = (await (await fetch(`${a.url}/health`)).json()) as { rate_limits: string };
    expect(health.rate_limits).toBe('redis');
  });

  it("a key's spending budget holds across both gateways: 200 racing calls on a 50-call budget pay exactly 50", async () => {
    const [a, b] = gws as [RunningGateway, RunningGateway];
    const signup = await fetch(`${a.url}/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'budget@example.com', password: 'scale password' }),
    });
    const account = (await signup.json()) as { id: string; csrf_token: string };
    const cookie = signup.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    // 15 USD of credits: the key's budget (5 USD a day, 50 calls of 0.1), not the credits, is what stops the calls.
    await a.core.ledger.topup(account.id, 100_000_000n);
    const created = await fetch(`${a.url}/v1/api-keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': account.csrf_token },
      body: JSON.stringify({ name: 'agent', limit_usd: 5, limit_period: 'day' }),
    });
    const { key } = (await created.json()) as { key: string };
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        fetch(`${(i % 2 ? a : b).url}/v1/call`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ service: 'shared', payload: { i } }),
        }).then(async (r) => ({ status: r.status, body: (await r.json()) as { limit_source?: string } })),
      ),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(50);
    const refused = results.filter((r) => r.status !== 200);
    expect(refused.every((r) => r.status === 402 && r.body.limit_source === 'key')).toBe(true);
    const balance = (await (await fetch(`${b.url}/v1/balance`, { headers: { authorization: `Bearer ${key}` } })).json()) as { balance_base_units: number };
    expect(balance.balance_base_units).toBe(100_000_000);
    expect((await a.core.ledger.verify()).ok).toBe(true);
  });

  it("a key's policy narrowed on one gateway is followed by the other within moments, not after the cache time", async () => {
    const [a, b] = gws as [RunningGateway, RunningGateway];
    const signup = await fetch(`${a.url}/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'narrow@example.com', password: 'narrow password' }),
    });
    const { csrf_token } = (await signup.json()) as { csrf_token: string };
    const cookie = signup.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const write = (path: string, method: string, body: unknown) =>
      fetch(`${a.url}${path}`, { method, headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrf_token }, body: JSON.stringify(body) });
    const { id, key } = (await (await write('/v1/api-keys', 'POST', { name: 'narrowed', limit_usd: 1, limit_period: 'day' })).json()) as {
      id: string;
      key: string;
    };
    const auth = { authorization: `Bearer ${key}` };
    const call = () =>
      fetch(`${b.url}/v1/call`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...auth },
        body: JSON.stringify({ service: 'shared', payload: {} }),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }));
    const policyOnB = async () =>
      ((await (await fetch(`${b.url}/v1/me`, { headers: auth })).json()) as { credential: { policy: Record<string, unknown> } }).credential.policy;
    // Gateway B has the key and its policy in its credential cache (60 s) now.
    expect((await call()).status).toBe(200);
    const balance = async () => ((await (await fetch(`${b.url}/v1/balance`, { headers: auth })).json()) as { balance_base_units: number }).balance_base_units;

    // Lowered on A to what the key has spent: B refuses its next call (402), nothing charged.
    expect((await write(`/v1/api-keys/${id}`, 'PATCH', { limit_usd: 0.1 })).status).toBe(200);
    await eventually('gateway B sees the lowered limit', async () => (await policyOnB()).limit_usd === 0.1);
    const before = await balance();
    expect(await call()).toMatchObject({ status: 402, body: { limit_source: 'key', limit_usd: 0.1, remaining_usd: 0 } });
    // Raised again and narrowed to another service on A: B refuses the call to 'shared' (403).
    expect((await write(`/v1/api-keys/${id}`, 'PATCH', { limit_usd: 1, allowed_services: ['echo'] })).status).toBe(200);
    await eventually('gateway B sees the allowed services', async () => JSON.stringify((await policyOnB()).allowed_services) === '["echo"]');
    expect(await call()).toMatchObject({ status: 403, body: { error: 'this API key may not call shared (allowed: echo)', limit_source: 'key' } });
    expect(await balance()).toBe(before);
  });

  it('a publisher activated and a key revoked on one gateway are seen on the other within moments, not after the cache time', async () => {
    const [a, b] = gws as [RunningGateway, RunningGateway];
    const signup = await fetch(`${a.url}/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'revoke@example.com', password: 'revoke password' }),
    });
    const { csrf_token } = (await signup.json()) as { csrf_token: string };
    const cookie = signup.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const created = await fetch(`${a.url}/v1/api-keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrf_token },
      body: JSON.stringify({ name: 'short-lived' }),
    });
    const { id, key } = (await created.json()) as { id: string; key: string };
    const auth = { authorization: `Bearer ${key}` };
    // Gateway B has the key in its credential cache now.
    expect((await fetch(`${b.url}/v1/me`, { headers: auth })).status).toBe(200);
    expect(((await (await fetch(`${b.url}/v1/me`, { headers: auth })).json()) as { is_publisher: boolean }).is_publisher).toBe(false);

    const activated = await fetch(`${a.url}/v1/publisher/activate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrf_token },
      body: JSON.stringify({ name: 'Revoke Labs' }),
    });
    expect(activated.status).toBe(200);
    // Well within the 60 s the cache keeps a principal: only the Redis broadcast can explain it.
    await eventually(
      'gateway B sees the activation',
      async () => ((await (await fetch(`${b.url}/v1/me`, { headers: auth })).json()) as { is_publisher: boolean }).is_publisher,
    );

    const revoked = await fetch(`${a.url}/v1/api-keys/${id}`, { method: 'DELETE', headers: { cookie, 'x-csrf-token': csrf_token } });
    expect(revoked.status).toBe(200);
    await eventually('gateway B refuses the revoked key', async () => (await fetch(`${b.url}/v1/me`, { headers: auth })).status === 401);
    const call = await fetch(`${b.url}/v1/call`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify({ service: 'shared', payload: {} }),
    });
    expect(call.status).toBe(401);
  });
});
