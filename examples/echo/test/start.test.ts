import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createCertificateSigner, encodeStrKey, randomBytes } from '@farebox/protocol';
import { startDevnet, type Devnet } from '@farebox/devnet';
import { ensureKeypairFile } from '@farebox/provider';
import { createRegistryClient } from '@farebox/stellar';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventually } from '@farebox/test-kit';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsx = join(root, '..', '..', 'node_modules', '.bin', 'tsx');
let devnet: Devnet;
let keyServer: Server;
let child: ChildProcess | undefined;
let platformKey: string;

beforeAll(async () => {
  devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant' });
  platformKey = (await createCertificateSigner(encodeStrKey('secretSeed', randomBytes(32)))).publicKey;
  // The one gateway route the start script reads: GET /v1/platform/key.
  keyServer = createServer((req, res) => {
    res.writeHead(req.url === '/v1/platform/key' ? 200 : 404, { 'content-type': 'application/json' });
    res.end(JSON.stringify(req.url === '/v1/platform/key' ? { publicKey: platformKey, network: 'local' } : { error: 'not found' }));
  });
  await new Promise<void>((r) => keyServer.listen(0, '127.0.0.1', r));
});

afterAll(async () => {
  if (child?.exitCode === null) {
    const exited = new Promise((r) => child!.once('exit', r));
    child.kill();
    await exited;
  }
  await new Promise((r) => keyServer.close(r));
  await devnet.close();
});

it('pnpm start reads the platform key from the gateway and registers the service on the devnet', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'farebox-echo-'));
  const env = {
    PATH: process.env.PATH,
    PORT: '0',
    FAREBOX_URL: `http://127.0.0.1:${(keyServer.address() as AddressInfo).port}`,
    FAREBOX_DEVNET_URL: devnet.url,
    KEYPAIR_PATH: join(dir, 'keypair'),
  };
  // A given KEYPAIR_PATH must exist: main.ts creates only its default demo key.
  const { publicKey } = ensureKeypairFile(env.KEYPAIR_PATH);
  child = spawn(tsx, ['--conditions=@farebox/source', 'src/main.ts'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  await eventually(
    'the service says what became of its registration (or exits)',
    () => /registry: |not registered|cannot start/.test(output) || child!.exitCode !== null,
    { timeoutMs: 20_000, intervalMs: 50 },
  );
  const listening = /echo listening on (http:\/\/127\.0\.0\.1:\d+)\//.exec(output)?.[1];
  expect(output).toMatch(/registry: registered "echo" at http:\/\/127\.0\.0\.1:\d+\//);
  expect(await createRegistryClient(devnet.network).getAgent('echo')).toMatchObject({ owner: publicKey, endpoint: `${listening}/` });
  expect(await (await fetch(`${listening}/manifest`)).json()).toMatchObject({ service: 'echo', ownerWallet: publicKey, platformPublicKey: platformKey });
});
