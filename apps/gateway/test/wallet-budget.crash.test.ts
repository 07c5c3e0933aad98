import type { ChildProcess } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair } from '@stellar/stellar-sdk';
import type { Devnet } from '@farebox/devnet';
import { createProvider } from '@farebox/provider';
import { parseAmount } from '@farebox/protocol';
import { createAccounts, createRegistryClient, keypairSigner, resolveNetwork } from '@farebox/stellar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, spawnGateway } from './process-kit.js';
import { startDevnetForSettlement } from './settlement-kit.js';
import { eventually } from '@farebox/test-kit';

// A gateway killed with SIGKILL after a wallet-path call under a spending
// limit recorded its payment and reserved it against the key's budget, before
// anything was paid on chain (and once more after the wallet paid). After the
// restart, reconciliation resolves the payment, and the budget's reservation
// goes with it: given back exactly, or spent exactly.

const PRICE = 2_500_001n; // 0.2500001 USDC
const LIMIT_USD = 1;
const LIMIT = 10_000_000n;

let devnet: Devnet;
let dataDir: string;
let port: number;
const children: ChildProcess[] = [];
const closers: Array<() => Promise<void>> = [];

async function startChild(options: { crashAt?: string; clockAheadMs?: number } = {}) {
  const gw = spawnGateway(
    {
      PORT: String(port),
      FAREBOX_DATA_DIR: dataDir,
      FAREBOX_DEVNET_URL: devnet.url,
      FAREBOX_ESCROW_BUDGET: '100000/1000',
      FAREBOX_FUNDING_INTERVAL: '1h',
      FAREBOX_SETTLEMENT_INTERVAL: '1h',
      FAREBOX_AUTH_RATE_LIMIT: '1000',
      // No credits: every call takes the wallet path.
      FAREBOX_SIGNUP_CREDIT: '0',
      // The test's service listens on 127.0.0.1; warnings only in the output it reads.
      FAREBOX_ALLOW_LOOPBACK_ENDPOINTS: 'true',
      FAREBOX_LOG_LEVEL: 'warn',
    },
    options,
  );
  children.push(gw.child);
  return { child: gw.child, url: await gw.started, exited: gw.exited };
}

async function api(url: string, key: string | undefined, path: string, body?: unknown, extra: Record<string, string> = {}) {
  const res = await fetch(`${url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...extra },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as any) : undefined };
}

beforeAll(async () => {
  devnet = await startDevnetForSettlement();
  dataDir = await mkdtemp(join(tmpdir(), 'farebox-wallet-budget-crash-'));
  port = await freePort();
}, 30_000);
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  for (const c of closers) await c().catch(() => undefined);
  await devnet?.close();
});

describe('a gateway killed between a wallet payment’s budget reservation and its settlement', () => {
  it('gives the reservation back exactly when reconciliation fails the unpaid payment after the restart, and spends it exactly for a payment whose escrow was released', async () => {
    const network = resolveNetwork({ network: 'local', devnetUrl: devnet.url, env: {} });
    const chain = createAccounts(network);
    const usdc = async (a: string) => (await chain.balances(a)).usdc ?? 0n;

    let gw = await startChild({ crashAt: 'wallet:recorded' });
    const platform = (await api(gw.url, undefined, '/v1/platform/key')).body as { publicKey: string; treasury: string };
    // The service: paid through an escrow from the caller's wallet.
    const service = `wbc-${process.pid % 100000}`;
    const kp = Keypair.random();
    await devnet.friendbot(kp.publicKey());
    const registry = createRegistryClient(network);
    const provider = createProvider({
      service,
      pricePerCall: '0.2500001',
      description: 'wallet budget crash test service',
      network: 'local',
      devnetUrl: devnet.url,
      platform: { publicKey: platform.publicKey },
      wallet: { secret: kp.secret() },
      trustlessWork: { apiKey: 'farebox-test', platformAddress: platform.treasury },
      servedStorePath: join(dataDir, 'served.json'),
      registry,
      env: {},
    }).serve((payload) => ({ echo: payload }));
    const listening = await provider.listen(0, '127.0.0.1');
    closers.push(() => provider.close());
    await chain.ensureUsdcTrustline(keypairSigner(kp.secret()));
    await registry.register(keypairSigner(kp.secret()), {
      service,
      pricePerCall: parseAmount('0.2500001'),
      endpoint: `${listening.url}/`,
      description: 'wallet budget crash test service',
    });

    // A caller with no credits, 1 USDC in its wallet and a key that may spend 1 USD in total.
    const res = await fetch(`${gw.url}/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `wallet-budget-${process.pid}@example.com`, password: 'crash test password' }),
    });
    const signup = (await res.json()) as { csrf_token: string; custodial_wallet: string };
    const cookie = res.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const created = await api(
      gw.url,
      undefined,
      '/v1/api-keys',
      { name: 'agent', limit_usd: LIMIT_USD, limit_period: 'total' },
      { cookie, 'x-csrf-token': signup.csrf_token },
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const key = created.body.key as string;
    const wallet = signup.custodial_wallet;
    await eventually('the wallet is set up on chain', async () => (await chain.balances(wallet)).usdc !== null, { timeoutMs: 20_000 });
    await devnet.friendbot(wallet, 10_000_000n);
    const policy = async (url: string) => (await api(url, key, '/v1/me')).body.credential.policy as Record<string, unknown>;
    expect(await policy(gw.url)).toMatchObject({ limit_usd: LIMIT_USD, limit_period: 'total', spent_usd: 0, remaining_usd: LIMIT_USD });
    expect((await api(gw.url, key, '/v1/balance')).body.balance_base_units).toBe(0);

    // The call dies with the process right after its payment and its reservation are recorded.
    const dying = await api(gw.url, key, '/v1/call', { service, payload: { n: 1 } }).catch((e: unknown) => e);
    expect(dying).toBeInstanceOf(Error);
    await gw.exited;
    expect(await usdc(wallet)).toBe(10_000_000n);

    // Restarted on the same data as a gateway would be more than ten minutes later: the interrupted payment is
    // given up at start, and its reservation with it (before the fix it stayed reserved for good under a total limit).
    gw = await startChild({ clockAheadMs: 11 * 60_000 });
    await eventually('the interrupted wallet payment is resolved', async () => {
      const txs = (await api(gw.url, key, '/v1/transactions')).body as any[];
      return txs.some((t) => t.type === 'call' && t.paid_with === 'wallet' && t.status === 'failed') || undefined;
    });
    expect(await policy(gw.url)).toMatchObject({ spent_usd: 0, remaining_usd: LIMIT_USD });
    expect(await usdc(wallet)).toBe(10_000_000n);

    // A wallet call that is paid counts as spent, exactly its price.
    const paid = await api(gw.url, key, '/v1/call', { service, payload: { n: 2 } });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect(paid.body).toMatchObject({ paidWith: 'wallet', cost: { base_units: Number(PRICE) } });
    expect(await usdc(wallet)).toBe(10_000_000n - PRICE);
    const left = LIMIT - PRICE;
    expect(await policy(gw.url)).toMatchObject({ spent_usd: Number(PRICE) / 1e7, remaining_usd: Number(left) / 1e7 });
    gw.child.kill('SIGTERM');
    await gw.exited;

    // Killed after the wallet paid (the service released the escrow) and before the payment was resolved: after the
    // restart, reconciliation finds the released escrow, the payment is completed and its reservation spent, exactly.
    gw = await startChild({ crashAt: 'wallet:paid' });
    const dyingPaid = await api(gw.url, key, '/v1/call', { service, payload: { n: 3 } }).catch((e: unknown) => e);
    expect(dyingPaid).toBeInstanceOf(Error);
    await gw.exited;
    expect(await usdc(wallet)).toBe(10_000_000n - 2n * PRICE);
    gw = await startChild({ clockAheadMs: 11 * 60_000 });
    await eventually('the paid wallet payment is resolved', async () => {
      const txs = (await api(gw.url, key, '/v1/transactions')).body as any[];
      return txs.filter((t) => t.type === 'call' && t.paid_with === 'wallet' && t.status === 'completed').length === 2 || undefined;
    });
    expect(await policy(gw.url)).toMatchObject({ spent_usd: Number(2n * PRICE) / 1e7, remaining_usd: Number(LIMIT - 2n * PRICE) / 1e7 });
    expect(await usdc(wallet)).toBe(10_000_000n - 2n * PRICE);
  }, 240_000);
});
