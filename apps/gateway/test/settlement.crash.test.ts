import type { ChildProcess } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Devnet } from '@farebox/devnet';
import { createProvider } from '@farebox/provider';
import { splitFee } from '@farebox/protocol';
import { createAccounts, createRegistryClient, resolveNetwork } from '@farebox/stellar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, spawnGateway } from './process-kit.js';
import { startDevnetForSettlement } from './settlement-kit.js';
import { eventually } from '@farebox/test-kit';

const PRICE = 1_234_567n;

let devnet: Devnet;
let dataDir: string;
let port: number;
const children: ChildProcess[] = [];
const closers: Array<() => Promise<void>> = [];

async function startChild(crashAt?: string): Promise<{ child: ChildProcess; url: string; exited: Promise<number | null> }> {
  const gw = spawnGateway(
    {
      PORT: String(port),
      FAREBOX_DATA_DIR: dataDir,
      FAREBOX_DEVNET_URL: devnet.url,
      FAREBOX_ESCROW_BUDGET: '100000/1000',
      FAREBOX_FUNDING_INTERVAL: '1h',
      FAREBOX_SETTLEMENT_INTERVAL: '1h',
      FAREBOX_AUTH_RATE_LIMIT: '1000',
      // The test's service listens on 127.0.0.1; warnings only in the output it reads.
      FAREBOX_ALLOW_LOOPBACK_ENDPOINTS: 'true',
      FAREBOX_LOG_LEVEL: 'warn',
    },
    crashAt ? { crashAt } : {},
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
  return { status: res.status, body: text ? (JSON.parse(text) as any) : undefined, headers: res.headers };
}

async function signup(url: string, email: string) {
  const res = await api(url, undefined, '/auth/signup', { email, password: 'crash test password' });
  const cookie = res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const key = (await api(url, undefined, '/v1/api-keys', { name: 'k' }, { cookie, 'x-csrf-token': res.body.csrf_token })).body.key as string;
  const me = await api(url, key, '/v1/me');
  return { key, wallet: me.body.custodial_wallet as string };
}

beforeAll(async () => {
  devnet = await startDevnetForSettlement();
  dataDir = await mkdtemp(join(tmpdir(), 'farebox-settle-crash-'));
  port = await freePort();
}, 30_000);
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  for (const c of closers) await c().catch(() => undefined);
  await devnet?.close();
});

describe('a settler killed at each step', () => {
  it('resumes after a restart and completes every cycle with no double payment: the publisher gets exactly the net, the treasury pays exactly that', async () => {
    const network = resolveNetwork({ network: 'local', devnetUrl: devnet.url, env: {} });
    const chain = createAccounts(network);
    const usdc = async (a: string) => (await chain.balances(a)).usdc ?? 0n;

    let gw = await startChild();
    const pub = await signup(gw.url, `pub-${process.pid}@example.com`);
    const caller = await signup(gw.url, `caller-${process.pid}@example.com`);
    const treasury = (await api(gw.url, undefined, '/v1/platform/key')).body.treasury as string;
    await eventually('the treasury is set up on chain', async () => (await chain.balances(treasury)).usdc !== null);
    await devnet.friendbot(treasury, 1_000n * 10_000_000n); // funded up front: no top-up during the test
    expect((await api(gw.url, pub.key, '/v1/publisher/activate', { name: 'Crash Co' })).status).toBe(200);
    const provider = createProvider({
      service: 'crashy',
      pricePerCall: '0.1234567',
      description: 'crash test service',
      network: 'local',
      devnetUrl: devnet.url,
      platform: { publicKey: (await api(gw.url, undefined, '/v1/platform/key')).body.publicKey },
      ownerWallet: pub.wallet,
      registry: createRegistryClient(network),
      env: {},
    }).serve((p) => ({ ok: p }));
    const listening = await provider.listen(0, '127.0.0.1');
    closers.push(() => provider.close());
    const reg = await api(gw.url, pub.key, '/v1/agents', {
      service: 'crashy',
      pricePerCallLamports: Number(PRICE),
      endpoint: `${listening.url}/`,
      description: 'crash test service',
    });
    expect(reg.status).toBe(201);
    await api(gw.url, caller.key, '/v1/topup', { amount: 100 });
    gw.child.kill('SIGTERM');
    await gw.exited;

    const points = ['submitted:deploy', 'submitted:fund', 'signed:release', 'submitted:release', 'recorded:release'];
    let calls = 0;
    for (const [i, point] of points.entries()) {
      const pubBefore = await usdc(pub.wallet);
      const treasuryBefore = await usdc(treasury);
      gw = await startChild(point);
      const n = 2 + i;
      for (let k = 0; k < n; k++) expect((await api(gw.url, caller.key, '/v1/call', { service: 'crashy', payload: { k } })).status).toBe(200);
      calls += n;
      // The settle request dies with the process at the crash point.
      const dying = await api(gw.url, pub.key, '/v1/publisher/settle', {}).catch((e: unknown) => e);
      expect(dying).toBeInstanceOf(Error);
      await gw.exited;

      gw = await startChild();
      const resumed = await api(gw.url, pub.key, '/v1/publisher/settle', {});
      expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
      const list = (await api(gw.url, pub.key, '/v1/publisher/settlements')).body as any[];
      expect(list.every((c) => c.state === 'done')).toBe(true);
      expect(list).toHaveLength(i + 1);
      const { net } = splitFee(PRICE * BigInt(n));
      expect(await usdc(pub.wallet), point).toBe(pubBefore + net);
      expect(await usdc(treasury), point).toBe(treasuryBefore - net);
      const cycle = list[0];
      expect(cycle).toMatchObject({ calls: n, net: { base_units: Number(net) } });
      expect(cycle.transactions.map((t: any) => t.step)).toEqual(['deploy', 'fund', 'complete', 'approve', 'release']);
      gw.child.kill('SIGTERM');
      await gw.exited;
    }
    expect(calls).toBe(2 + 3 + 4 + 5 + 6);
  }, 400_000);
});
