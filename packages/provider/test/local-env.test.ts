import { mkdtemp, stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createProvider, ensureKeypairFile, prepareLocalEnv } from '../src/index.js';
import { newSigner } from './helpers.js';

// A gateway's one route the helper reads, on loopback.
let server: Server;
let gateway: string;
let answer: { status: number; body: unknown };
let requests = 0;
const platform = (await newSigner()).publicKey;
const treasury = (await newSigner()).publicKey;

beforeAll(async () => {
  server = createServer((req, res) => {
    requests++;
    const found = req.url === '/v1/platform/key';
    res.writeHead(found ? answer.status : 404, { 'content-type': 'application/json' });
    res.end(JSON.stringify(found ? answer.body : { error: 'not found' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  gateway = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise((resolve) => server.close(resolve)));

const tmp = () => mkdtemp(join(tmpdir(), 'farebox-local-env-'));

it('fills in the devnet, a new owner key and the gateway platform key, and leaves the given environment unchanged', async () => {
  answer = { status: 200, body: { publicKey: platform, treasury, network: 'local' } };
  const dir = await tmp();
  const given = { FAREBOX_URL: `${gateway}/`, PORT: '0' };
  const lines: string[] = [];
  const env = await prepareLocalEnv(given, { keypairPath: join(dir, 'keypair'), log: (l) => lines.push(l) });
  expect(env).toEqual({
    FAREBOX_URL: `${gateway}/`,
    PORT: '0',
    FAREBOX_DEVNET_URL: `${gateway}/devnet`,
    KEYPAIR_PATH: join(dir, 'keypair'),
    FAREBOX_PLATFORM_PUBLIC_KEY: platform,
  });
  expect(given).toEqual({ FAREBOX_URL: `${gateway}/`, PORT: '0' });
  expect((await stat(join(dir, 'keypair'))).mode & 0o777).toBe(0o600);
  expect(lines).toEqual([`created a local owner key ${ensureKeypairFile(join(dir, 'keypair')).publicKey} in ${join(dir, 'keypair')}`]);
});

it('keeps every variable already set and asks the gateway nothing when it has no question', async () => {
  const before = requests;
  const set = {
    FAREBOX_URL: gateway,
    FAREBOX_DEVNET_URL: 'http://127.0.0.1:9/devnet',
    AGENT_WALLET_SECRET: 'S-given',
    FAREBOX_PLATFORM_PUBLIC_KEY: platform,
    FAREBOX_DEVNET_PASSPHRASE: 'local',
  };
  expect(await prepareLocalEnv(set, { log: () => {} })).toEqual(set);
  expect(requests).toBe(before);
});

it("reads the passphrase of the gateway's devnet, so a service next to a devnet standing in for testnet signs for it and offers exact", async () => {
  answer = { status: 200, body: { publicKey: platform, treasury, network: 'local', passphrase: 'Test SDF Network ; September 2015' } };
  const env = await prepareLocalEnv({ FAREBOX_URL: gateway, FAREBOX_PLATFORM_PUBLIC_KEY: platform }, { keypairPath: join(await tmp(), 'k'), log: () => {} });
  expect(env.FAREBOX_DEVNET_PASSPHRASE).toBe('Test SDF Network ; September 2015');
  const { config } = createProvider({ service: 'echo', pricePerCall: '0.01', network: 'local', onWarning: () => {}, env });
  expect([config.x402Network, config.exact?.facilitatorUrl]).toEqual(['stellar:testnet', `${gateway}/x402`]);
  // Another network's gateway names no devnet passphrase to use.
  answer = { status: 200, body: { publicKey: platform, network: 'testnet', passphrase: 'Test SDF Network ; September 2015' } };
  expect((await prepareLocalEnv({ FAREBOX_URL: gateway, KEYPAIR_PATH: 'unused' }, { log: () => {} })).FAREBOX_DEVNET_PASSPHRASE).toBeUndefined();
});

it('with an escrow API key, also reads the treasury the direct escrows must name', async () => {
  answer = { status: 200, body: { publicKey: platform, treasury } };
  const env = await prepareLocalEnv({ FAREBOX_URL: gateway, KEYPAIR_PATH: join(await tmp(), 'k'), TRUSTLESS_WORK_API_KEY: 'tw-key' }, { log: () => {} });
  expect(env).toMatchObject({ FAREBOX_PLATFORM_PUBLIC_KEY: platform, TRUSTLESS_WORK_PLATFORM_ADDRESS: treasury });
});

it('logs a gateway that answers no valid key, and returns the environment without one', async () => {
  const lines: string[] = [];
  for (const body of [{ publicKey: 'not-a-key' }, { error: 'down' }]) {
    answer = { status: 200, body };
    const env = await prepareLocalEnv({ FAREBOX_URL: gateway, KEYPAIR_PATH: 'unused' }, { log: (l) => lines.push(l) });
    expect(env.FAREBOX_PLATFORM_PUBLIC_KEY).toBeUndefined();
  }
  answer = { status: 503, body: { error: 'starting' } };
  await prepareLocalEnv({ FAREBOX_URL: gateway, KEYPAIR_PATH: 'unused' }, { log: (l) => lines.push(l) });
  expect(lines).toEqual([
    `cannot read the platform key from ${gateway}/v1/platform/key (the answer has no valid publicKey): set FAREBOX_URL to your gateway's address (now ${gateway}; npm start prints it), or FAREBOX_PLATFORM_PUBLIC_KEY to its key`,
    `cannot read the platform key from ${gateway}/v1/platform/key (the answer has no valid publicKey): set FAREBOX_URL to your gateway's address (now ${gateway}; npm start prints it), or FAREBOX_PLATFORM_PUBLIC_KEY to its key`,
    `cannot read the platform key from ${gateway}/v1/platform/key (HTTP 503): set FAREBOX_URL to your gateway's address (now ${gateway}; npm start prints it), or FAREBOX_PLATFORM_PUBLIC_KEY to its key`,
  ]);
});

it('a gateway that is not there (another port): the message names FAREBOX_URL', async () => {
  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as AddressInfo).port;
  await new Promise((r) => closed.close(r));
  const lines: string[] = [];
  await prepareLocalEnv({ FAREBOX_URL: `http://127.0.0.1:${port}`, KEYPAIR_PATH: 'unused' }, { log: (l) => lines.push(l) });
  expect(lines).toEqual([
    `cannot read the platform key from http://127.0.0.1:${port}/v1/platform/key (fetch failed): set FAREBOX_URL to your gateway's address (now http://127.0.0.1:${port}; npm start prints it), or FAREBOX_PLATFORM_PUBLIC_KEY to its key`,
  ]);
});
