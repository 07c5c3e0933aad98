import type { ChildProcess } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Devnet } from '@farebox/devnet';
import { createAccounts, resolveNetwork } from '@farebox/stellar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, spawnGateway } from './process-kit.js';
import { startDevnetForSettlement } from './settlement-kit.js';
import { testnetOnDevnet } from './testnet-kit.js';
import { eventually } from '@farebox/test-kit';

// A testnet-configured gateway (paid top-ups) killed with SIGKILL between the
// moment its top-up payment is on chain and the moment it is credited.

let devnet: Devnet;
let dataDir: string;
let port: number;
let env: Record<string, string>;
const children: ChildProcess[] = [];

async function startChild(crashAt?: string): Promise<{ url: string; exited: Promise<number | null> }> {
  const gw = spawnGateway(
    { PORT: String(port), FAREBOX_DATA_DIR: dataDir, FAREBOX_AUTH_RATE_LIMIT: '1000', FAREBOX_LOG_LEVEL: 'warn', ...env },
    crashAt ? { crashAt } : {},
  );
  children.push(gw.child);
  return { url: await gw.started, exited: gw.exited };
}

async function api(url: string, key: string | undefined, path: string, body?: unknown, extra: Record<string, string> = {}) {
  const res = await fetch(`${url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...extra },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as any) : undefined, headers: res.headers };
}

beforeAll(async () => {
  devnet = await startDevnetForSettlement();
  dataDir = await mkdtemp(join(tmpdir(), 'farebox-topup-crash-'));
  port = await freePort();
  env = testnetOnDevnet(devnet, { FAREBOX_FUNDING_INTERVAL: '1h', FAREBOX_SETTLEMENT_INTERVAL: '1h' });
}, 30_000);
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await devnet?.close();
});

describe('a gateway killed between a top-up payment and its credit', () => {
  it('credits it exactly once after the restart, and the payment left the wallet exactly once', async () => {
    const chain = createAccounts(resolveNetwork({ network: 'local', devnetUrl: devnet.url, env: {} }));
    const usdc = async (a: string) => (await chain.balances(a)).usdc ?? 0n;

    let gw = await startChild('topup:submitted');
    const signup = await api(gw.url, undefined, '/auth/signup', { email: `crash-${process.pid}@example.com`, password: 'crash test password' });
    expect(signup.status).toBe(201);
    const cookie = signup.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const key = (await api(gw.url, undefined, '/v1/api-keys', { name: 'k' }, { cookie, 'x-csrf-token': signup.body.csrf_token })).body.key as string;
    const wallet = signup.body.custodial_wallet as string;
    const treasury = (await api(gw.url, undefined, '/v1/platform/key')).body.treasury as string;
    await eventually('the wallet is set up on chain', async () => (await chain.balances(wallet)).usdc !== null);
    await devnet.friendbot(wallet, 20n * 10_000_000n);
    const wallet0 = await usdc(wallet);
    const treasury0 = await usdc(treasury);
    const credits0 = (await api(gw.url, key, '/v1/balance')).body.balance_base_units as number;

    // The request dies with the process right after the payment is submitted and applied.
    const dying = await api(gw.url, key, '/v1/topup', { amount: 12.5 }, { 'idempotency-key': 'crash-1' }).catch((e: unknown) => e);
    expect(dying).toBeInstanceOf(Error);
    await gw.exited;
    expect(await usdc(wallet)).toBe(wallet0 - 125_000_000n);
    expect(await usdc(treasury)).toBe(treasury0 + 125_000_000n);

    gw = await startChild();
    // Reconciled at start: the payment on chain becomes credits once.
    const credits = await eventually('the payment on chain is credited', async () => {
      const now = (await api(gw.url, key, '/v1/balance')).body.balance_base_units as number;
      return now !== credits0 ? now : undefined;
    });
    expect(credits).toBe(credits0 + 125_000_000);
    const txs = ((await api(gw.url, key, '/v1/transactions')).body as any[]).filter((t) => t.type === 'topup' && t.note !== 'signup');
    expect(txs).toHaveLength(1);
    expect(txs[0]).toMatchObject({ status: 'completed', paid_with: 'wallet', amount_base_units: 125_000_000 });
    expect(txs[0].tx_signature).toMatch(/^[0-9a-f]{64}$/);

    // A later top-up moves only its own amount.
    await api(gw.url, key, '/v1/topup', { amount: 1 }, { 'idempotency-key': 'after' });
    expect(await usdc(wallet)).toBe(wallet0 - 135_000_000n);
    expect(await usdc(treasury)).toBe(treasury0 + 135_000_000n);
    expect((await api(gw.url, key, '/v1/balance')).body.balance_base_units).toBe(credits0 + 135_000_000);
  }, 120_000);
});
