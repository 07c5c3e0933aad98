import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Keypair } from '@stellar/stellar-sdk';
import { createRegistryClient, keypairSigner, resolveNetwork } from '@farebox/stellar';
import { afterAll, describe, expect, it } from 'vitest';

const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));

async function freePort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

function startGatewayProcess(dataDir: string, port: number): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['--conditions=@farebox/source', '--import', 'tsx', main], {
    env: {
      PATH: process.env.PATH,
      PORT: String(port),
      FAREBOX_DATA_DIR: dataDir,
      FAREBOX_CALL_TIMEOUT_MS: '20000',
      FAREBOX_HOLD_TIMEOUT_MS: '25000',
      FAREBOX_AUTH_RATE_LIMIT: '100',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stderr!.on('data', (d) => (out += d));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /Farebox gateway\s+(\S+)/.exec(out);
      if (m) resolve({ child, url: m[1]! });
    });
    child.once('exit', (code) => reject(new Error(`gateway exited with ${code}: ${out}`)));
  });
}

describe('a gateway killed between hold and post', () => {
  const children: ChildProcess[] = [];
  let hanging: Server | undefined;
  afterAll(() => {
    for (const c of children) c.kill('SIGKILL');
    hanging?.closeAllConnections();
    hanging?.close();
  });

  it('restarts on the same data, and the reaper voids the hold so the balance is whole', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'farebox-crash-'));
    const port = await freePort();
    const first = await startGatewayProcess(dataDir, port);
    children.push(first.child);
    const url = first.url;

    let received!: () => void;
    const requestArrived = new Promise<void>((r) => (received = r));
    hanging = createServer((req) => {
      req.resume();
      received();
    });
    await new Promise<void>((r) => hanging!.listen(0, '127.0.0.1', r));
    const endpoint = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/`;

    const network = resolveNetwork({ network: 'local', devnetUrl: `${url}/devnet`, env: {} });
    const owner = Keypair.random();
    await fetch(`${url}/devnet/friendbot?addr=${owner.publicKey()}`);
    await createRegistryClient(network).register(keypairSigner(owner.secret()), { service: 'hangs', pricePerCall: 20_000_000n, endpoint, description: 'never answers' });

    const signup = await fetch(`${url}/auth/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'crash@example.com', password: 'crash test password' }) });
    const cookie = signup.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const { csrf_token } = (await signup.json()) as { csrf_token: string };
    const { key } = (await (await fetch(`${url}/v1/api-keys`, { method: 'POST', headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrf_token }, body: JSON.stringify({ name: 'k' }) })).json()) as { key: string };
    const auth = { authorization: `Bearer ${key}` };
    const balance = async (base: string) => ((await (await fetch(`${base}/v1/balance`, { headers: auth })).json()) as { balance_base_units: number }).balance_base_units;

    // Wait until the mirror has the service, then call it: the hold is placed and the service hangs.
    for (let i = 0; i < 50; i++) {
      const list = (await (await fetch(`${url}/v1/agents`, { headers: auth })).json()) as Array<{ service: string }>;
      if (list.some((s) => s.service === 'hangs')) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const inFlight = fetch(`${url}/v1/call`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ service: 'hangs', payload: {} }) }).catch((e: unknown) => e);
    await requestArrived;
    expect(await balance(url)).toBe(30_000_000);

    first.child.kill('SIGKILL');
    await inFlight;
    await new Promise((r) => first.child.once('exit', r));

    const second = await startGatewayProcess(dataDir, port);
    children.push(second.child);
    // Still held right after the restart: nothing was lost, nothing refunded twice.
    const deadline = Date.now() + 40_000;
    let now = await balance(second.url);
    expect([30_000_000, 50_000_000]).toContain(now);
    while (now !== 50_000_000 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      now = await balance(second.url);
    }
    expect(now).toBe(50_000_000);
    const tx = (await (await fetch(`${second.url}/v1/transactions`, { headers: auth })).json()) as Array<{ type: string; status: string }>;
    expect(tx[0]).toMatchObject({ type: 'call', status: 'refunded' });
    second.child.kill('SIGTERM');
  }, 150_000);
});
