import type { ChildProcess } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair } from '@stellar/stellar-sdk';
import { createRegistryClient, keypairSigner, resolveNetwork } from '@farebox/stellar';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, spawnGateway } from './process-kit.js';
import { eventually } from '@farebox/test-kit';

const CALLS = 12;
const PRICE = 3_000_000;

const HOLD_TIMEOUT_MS = 25_000;

async function startGatewayProcess(dataDir: string, port: number, clockAheadMs?: number): Promise<{ child: ChildProcess; url: string }> {
  const gw = spawnGateway(
    {
      PORT: String(port),
      FAREBOX_DATA_DIR: dataDir,
      FAREBOX_CALL_TIMEOUT_MS: '20000',
      FAREBOX_HOLD_TIMEOUT_MS: String(HOLD_TIMEOUT_MS),
      FAREBOX_AUTH_RATE_LIMIT: '100',
      // The test's services listen on 127.0.0.1; warnings only in the output it reads.
      FAREBOX_ALLOW_LOOPBACK_ENDPOINTS: 'true',
      FAREBOX_LOG_LEVEL: 'warn',
    },
    clockAheadMs === undefined ? {} : { clockAheadMs },
  );
  return { child: gw.child, url: await gw.started };
}

describe('a gateway killed with calls in flight', () => {
  const children: ChildProcess[] = [];
  let hanging: Server | undefined;
  afterAll(() => {
    for (const c of children) c.kill('SIGKILL');
    hanging?.closeAllConnections();
    hanging?.close();
  });

  it('restarts on the same data; the reaper voids the holds it left, and every posted call stays charged once', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'farebox-crash-'));
    const port = await freePort();
    const first = await startGatewayProcess(dataDir, port);
    children.push(first.child);
    const url = first.url;

    // Under load: the service answers every other call at once and leaves the rest hanging.
    let arrived = 0;
    let allArrived!: () => void;
    const requestsArrived = new Promise<void>((r) => (allArrived = r));
    hanging = createServer((req, res) => {
      req.resume();
      const n = arrived++;
      if (n % 2 === 0) req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
      if (arrived === CALLS) allArrived();
    });
    await new Promise<void>((r) => hanging!.listen(0, '127.0.0.1', r));
    const endpoint = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/`;

    const network = resolveNetwork({ network: 'local', devnetUrl: `${url}/devnet`, env: {} });
    const owner = Keypair.random();
    await fetch(`${url}/devnet/friendbot?addr=${owner.publicKey()}`);
    await createRegistryClient(network).register(keypairSigner(owner.secret()), {
      service: 'hangs',
      pricePerCall: BigInt(PRICE),
      endpoint,
      description: 'never answers',
    });

    const signup = await fetch(`${url}/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'crash@example.com', password: 'crash test password' }),
    });
    const cookie = signup.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const { csrf_token } = (await signup.json()) as { csrf_token: string };
    const { key } = (await (
      await fetch(`${url}/v1/api-keys`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrf_token },
        body: JSON.stringify({ name: 'k' }),
      })
    ).json()) as { key: string };
    const auth = { authorization: `Bearer ${key}` };
    const balance = async (base: string) =>
      ((await (await fetch(`${base}/v1/balance`, { headers: auth })).json()) as { balance_base_units: number }).balance_base_units;

    // Wait until the mirror has the service, then call it: the hold is placed and the service hangs.
    await eventually('the gateway lists the service', async () =>
      ((await (await fetch(`${url}/v1/agents`, { headers: auth })).json()) as Array<{ service: string }>).some((s) => s.service === 'hangs'),
    );
    const inFlight = Array.from({ length: CALLS }, (_, i) =>
      fetch(`${url}/v1/call`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ service: 'hangs', payload: { i } }),
      }).catch((e: unknown) => e),
    );
    await requestsArrived;
    // Half answered (charged), half held and waiting.
    expect(await balance(url)).toBe(50_000_000 - CALLS * PRICE);

    const exited = first.child.exitCode !== null || first.child.signalCode !== null ? Promise.resolve() : new Promise((r) => first.child.once('exit', r));
    first.child.kill('SIGKILL');
    await Promise.all([exited, ...inFlight]);

    // The restarted gateway's clock is past the holds' timeout (the time an operator's restart takes, not waited out here).
    const second = await startGatewayProcess(dataDir, port, HOLD_TIMEOUT_MS + 1_000);
    children.push(second.child);
    // After the restart the reaper voids every hold the dead process left: the
    // calls it had posted stay charged, the rest return, nothing twice.
    const calls = async () =>
      ((await (await fetch(`${second.url}/v1/transactions?limit=500`, { headers: auth })).json()) as Array<{ type: string; status: string }>).filter(
        (t) => t.type === 'call',
      );
    const txs = await eventually(
      'the reaper resolves every hold the dead process left',
      async () => {
        const t = await calls();
        return t.some((x) => x.status === 'pending') ? undefined : t;
      },
      { timeoutMs: 40_000, intervalMs: 200 },
    );
    expect(txs).toHaveLength(CALLS);
    expect(txs.filter((t) => t.status === 'pending')).toHaveLength(0);
    const posted = txs.filter((t) => t.status === 'completed').length;
    expect(posted).toBeLessThanOrEqual(CALLS / 2);
    expect(txs.filter((t) => t.status === 'refunded').length).toBe(CALLS - posted);
    expect(await balance(second.url)).toBe(50_000_000 - posted * PRICE);
    second.child.kill('SIGTERM');
  }, 150_000);
});
