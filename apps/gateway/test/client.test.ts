import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, type RunningGateway } from '../src/index.js';
import { encodeStrKey, parseAmount, randomBytes } from '@farebox/protocol';
import { createProvider } from '@farebox/provider';
import { createRegistryClient, keypairSigner } from '@farebox/stellar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationList } from '@farebox/contract';
import { ClientError, GatewayApiError, createGatewayClient, type GatewayClient } from '@farebox/client';

const newSecret = () => encodeStrKey('secretSeed', randomBytes(32));
/** A facilitator request (x402 v2) the recording client sends: its shape only matters. */
const X402_REQ = { scheme: 'exact', network: 'stellar:testnet', asset: 'C', amount: '1', payTo: 'G', maxTimeoutSeconds: 60 };
const X402_BODY = {
  x402Version: 2 as const,
  paymentPayload: { x402Version: 2 as const, accepted: X402_REQ, payload: { transaction: 'AAAA' } },
  paymentRequirements: X402_REQ,
};

let gw: RunningGateway;
let api: GatewayClient;
let closeService: (() => Promise<void>) | undefined;

/** Signs up through the real form endpoint and creates an API key with the session, as the dashboard does. */
async function signupKey(base: string): Promise<string> {
  const email = `c${Date.now()}${Math.random().toString(36).slice(2, 8)}@example.com`;
  const signup = await fetch(`${base}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: 'correct horse battery' }),
  });
  if (signup.status !== 201) throw new Error(`signup failed: ${signup.status}`);
  const cookie = signup.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const { csrf_token: csrf } = (await signup.json()) as { csrf_token: string };
  const created = await fetch(`${base}/v1/api-keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrf },
    body: JSON.stringify({ name: 'client-test' }),
  });
  return ((await created.json()) as { key: string }).key;
}

beforeAll(async () => {
  gw = await startGateway({
    port: 0,
    network: 'local',
    // The test services listen on 127.0.0.1.
    allowLoopbackEndpoints: true,
    // Warnings and errors only: the tests read their answers, not the access log.
    logLevel: 'warn',
    dataDir: await mkdtemp(join(tmpdir(), 'farebox-client-gw-')),
    devnetCloseIntervalMs: 'instant',
    devnetInMemory: true,
    callTimeoutMs: 5000,
    rateLimits: { authPerMinute: 1000 },
    env: {},
  });
  api = createGatewayClient({ baseUrl: gw.url, apiKey: await signupKey(gw.url) });

  const secret = newSecret();
  const owner = keypairSigner(secret);
  await gw.devnet!.friendbot(owner.publicKey);
  const provider = createProvider({
    service: 'gwc-echo',
    pricePerCall: '0.25',
    description: 'echoes the payload',
    network: 'local',
    devnetUrl: gw.devnet!.url,
    platform: { publicKey: gw.core.platformPublicKey },
    wallet: { secret },
    env: {},
  }).serve((payload) => ({ echo: payload }));
  const listening = await provider.listen(0, '127.0.0.1');
  closeService = () => provider.close();
  await createRegistryClient(gw.core.network).register(owner, {
    service: 'gwc-echo',
    pricePerCall: parseAmount('0.25'),
    endpoint: `${listening.url}/`,
    description: 'echoes the payload',
  });
  // syncOnce() joins a sync already in flight, which may have read the chain before this registration: sync until it shows.
  for (let i = 0; i < 50 && !gw.core.mirror.get('gwc-echo'); i++) await gw.core.mirror.syncOnce();
});

afterAll(async () => {
  await closeService?.();
  await gw?.close();
});

describe('the gateway REST client against a running gateway', () => {
  it('reads health and the platform key without a credential', async () => {
    const open = createGatewayClient({ baseUrl: gw.url });
    await expect(open.health()).resolves.toMatchObject({ ok: true, service: 'farebox-gateway' });
    const key = await open.platform.key();
    expect(key.publicKey).toBe(gw.core.platformPublicKey);
    expect(key.treasury).toMatch(/^G[A-Z2-7]{55}$/);
    await expect(open.me()).rejects.toThrow(/needs a credential/);
  });

  it('reads the account and its sign-up credit, and tops up', async () => {
    const me = await api.me();
    expect(me.custodial_wallet).toMatch(/^G/);
    expect(me.balance_base_units).toBe(50_000_000);
    const after = await api.topup(10, { idempotencyKey: 'client-topup-1' });
    expect(after.balance_usd).toBe(15);
    // The local network's top-ups are free test credits: no payment, no explorer link.
    expect(after.topup).toMatchObject({
      type: 'topup',
      amount_base_units: 100_000_000,
      amount_usd: 10,
      status: 'completed',
      paid_with: null,
      tx_signature: null,
      explorer_url: null,
    });
    expect((await api.platform.key()).topups).toBe('free');
    // The same key again: the first answer, credited once.
    expect((await api.topup(10, { idempotencyKey: 'client-topup-1' })).topup.id).toBe(after.topup.id);
    expect((await api.balance()).balance_base_units).toBe(150_000_000);
    expect(['ok', 'provisioning']).toContain((await api.wallet()).status);
    const [latest] = await api.transactions({ limit: 1 });
    expect(latest).toMatchObject({ type: 'topup', amount_lamports: 100_000_000, status: 'completed', paid_with: null, note: expect.stringMatching(/^free/) });
  });

  it('turns gateway errors into GatewayApiError with the status and the gateway message', async () => {
    const err = await api.topup(2000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayApiError);
    expect(err).toBeInstanceOf(ClientError);
    expect((err as GatewayApiError).status).toBe(400);
    expect((err as GatewayApiError).message).toBe('invalid amount (must be 0 < n <= 1000)');
    // The id the client sent, echoed by the gateway and logged there as reqId.
    expect((err as GatewayApiError).requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect((err as GatewayApiError).data.requestId).toBe((err as GatewayApiError).requestId);

    const bad = createGatewayClient({ baseUrl: gw.url, apiKey: 'sk_live_not_a_key' });
    const unauth = await bad.balance().catch((e: unknown) => e);
    expect((unauth as GatewayApiError).status).toBe(401);
  });

  it('lists the catalog and calls a service with credits, then shows the call in transactions', async () => {
    const services = await api.agents.list();
    expect(services.map((s) => s.service)).toContain('gwc-echo');
    const out = await api.call('gwc-echo', { text: 'hello' }, { idempotencyKey: 'gwc-1', maxCost: 1 });
    expect(out.result).toEqual({ echo: { text: 'hello' } });
    expect(out.cost).toMatchObject({ lamports: 2_500_000, usd: 0.25 });
    expect(out.paidWith).toBe('credit');
    expect(out.trace.steps.length).toBeGreaterThan(0);
    const txs = await api.transactions({ limit: 5 });
    expect(txs[0]).toMatchObject({ type: 'call', amount_lamports: 2_500_000, service: 'gwc-echo' });

    const missing = await api.call('gwc-nobody', {}).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(GatewayApiError);
    expect((missing as GatewayApiError).message).toBe('service not found');
  });

  it('creates, lists and revokes API keys; a revoked key is refused', async () => {
    const created = await api.apiKeys.create('script');
    expect(created.key).toMatch(/^sk_live_/);
    expect((await api.apiKeys.list()).map((k) => k.id)).toContain(created.id);
    const second = createGatewayClient({ baseUrl: gw.url, apiKey: created.key });
    await expect(second.balance()).resolves.toMatchObject({ asset: 'USDC' });
    await expect(api.apiKeys.revoke(created.id)).resolves.toMatchObject({ id: created.id, revoked: true });
    expect(((await second.balance().catch((e: unknown) => e)) as GatewayApiError).status).toBe(401);
    expect(((await api.apiKeys.revoke('key_unknown').catch((e: unknown) => e)) as GatewayApiError).status).toBe(404);
  });

  it('activates publishing and reads the publisher views', async () => {
    await expect(api.publisher.activate('Client Tests Inc')).resolves.toMatchObject({ is_publisher: true, publisher_name: 'Client Tests Inc' });
    const overview = await api.publisher.overview();
    expect(overview.calls).toBe(0);
    expect(await api.publisher.analytics({ days: 7 })).toBeInstanceOf(Array);
    expect(await api.publisher.settlements({ limit: 10 })).toEqual([]);
    expect(await api.oauthConnections.list()).toEqual([]);
    expect(await api.platform.stats()).toMatchObject({ fee: { pct: 5 } });
  });
  it('reaches every operation of the contract: the typed methods, and request() by id for the rest', async () => {
    // The methods are built from the table: each one sends its operation's method and path.
    const seen: string[] = [];
    const recording = createGatewayClient({
      baseUrl: 'http://gateway.test',
      apiKey: 'sk_live_x',
      fetch: async (url, init) => {
        seen.push(`${init?.method} ${new URL(String(url)).pathname}`);
        return new Response(JSON.stringify({ error: 'recorded' }), { status: 418 });
      },
    });
    const calls: Array<() => Promise<unknown>> = [
      () => recording.me(),
      () => recording.balance(),
      () => recording.wallet(),
      () => recording.topup(1),
      () => recording.call('s', {}),
      () => recording.transactions(),
      () => recording.agents.list(),
      () => recording.agents.manifest('s'),
      () => recording.agents.get('s'),
      () => recording.agents.health('s', { window: '7d' }),
      () => recording.agents.mine(),
      () => recording.agents.register({ service: 's', pricePerCallLamports: 1n, endpoint: 'https://x', description: '' }),
      () => recording.agents.update('s', { description: 'd' }),
      () => recording.agents.remove('s'),
      () => recording.apiKeys.list(),
      () => recording.apiKeys.create('n'),
      () => recording.apiKeys.revoke('k'),
      () => recording.apiKeys.update('k', { name: 'n' }),
      () => recording.oauthConnections.list(),
      () => recording.oauthConnections.update('c', { confirm_above_usd: 1 }),
      () => recording.oauthConnections.revoke('c'),
      () => recording.webhooks.list(),
      () => recording.webhooks.create('https://x', ['topup.completed']),
      () => recording.webhooks.remove('k'),
      () => recording.webhooks.rotateSecret('k', { expirePreviousInHours: 1 }),
      () => recording.webhooks.ping('k'),
      () => recording.webhooks.deliveries('k', { limit: 5 }),
      () => recording.webhooks.redeliver('k', '1'),
      () => recording.publisher.activate('n'),
      () => recording.publisher.overview(),
      () => recording.publisher.settlements(),
      () => recording.publisher.analytics(),
      () => recording.publisher.settle(),
      () => recording.publisher.linkChallenge('G'),
      () => recording.publisher.link({ owner: 'G', challenge: 'c', signature: 's' }),
      () => recording.publisher.byOwner('s'),
      () => recording.platform.stats(),
      () => recording.platform.key(),
      () => recording.health(),
      () => recording.disputes.open({ escrowId: 'C', proof: 'p' }),
      () => recording.disputes.status('C'),
      () => recording.operator.whoami(),
      () => recording.operator.disputes(),
      () => recording.operator.resolveDispute('C', { action: 'refund' }),
      () => recording.operator.treasury(),
      () => recording.operator.settlements(),
      () => recording.operator.retrySettlement('1'),
      () => recording.operator.revenue(),
      () => recording.operator.audit(),
      () => recording.operator.reconciliation(),
      () => recording.request('signup', { body: { email: 'a@b.c', password: 'p' } }),
      () => recording.request('login', { body: { email: 'a@b.c', password: 'p' } }),
      () => recording.request('logout'),
      () => recording.request('ready'),
      () => recording.request('healthFeed'),
      () => recording.request('bazaarResources'),
      () => recording.request('bazaarSearch', { query: { query: 'x' } }),
      () => recording.request('facilitatorBazaarResources'),
      () => recording.request('facilitatorBazaarSearch', { query: { query: 'x' } }),
      () => recording.request('x402Supported'),
      () => recording.request('x402Verify', { body: X402_BODY }),
      () => recording.request('x402Settle', { body: X402_BODY }),
      () => recording.request('x402Refund', { body: { transaction: 'a'.repeat(64), service: 's', timestamp: 1, signature: 'x' } }),
    ];
    for (const c of calls) await expect(c()).rejects.toMatchObject({ status: 418, message: 'recorded' });
    const want = operationList.map((o) => `${o.method} ${o.path.replace(/:[A-Za-z]+/g, 'X')}`).sort();
    expect(seen.map((x) => x.replace(/\/(s|k|c|C|1)(?=\/|$)/g, '/X')).sort()).toEqual(want);
  });

  it('validates every answer against the contract: wallet status, the OAuth connection list, the operator and dispute views', async () => {
    const balance = await api.balance();
    expect(['ok', 'provisioning', 'unavailable']).toContain(balance.wallet_status);
    expect(balance.total_sol).toBe(balance.total_base_units);
    expect(await api.operator.whoami()).toEqual({ operator: false, email: expect.stringMatching(/@example\.com$/) });
    const forbidden = await api.operator.treasury().catch((e: unknown) => e);
    expect((forbidden as GatewayApiError).status).toBe(403);
    const open = createGatewayClient({ baseUrl: gw.url });
    const unknown = await open.disputes.status('CA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQGAXE').catch((e: unknown) => e);
    expect(unknown).toMatchObject({ status: 404, message: 'dispute not found' });
    await expect(open.request('ready')).resolves.toMatchObject({ ready: true, checks: expect.objectContaining({ database: 'ok' }) });
    // An answer that breaks the contract is refused, naming the field.
    const drifted = createGatewayClient({
      baseUrl: gw.url,
      apiKey: 'sk_live_x',
      fetch: async () => new Response(JSON.stringify({ ...balance, wallet_status: 'maybe' }), { status: 200 }),
    });
    await expect(drifted.balance()).rejects.toMatchObject({ code: 'BAD_RESPONSE', message: expect.stringMatching(/wallet_status/) });
  });
});
