import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc } from '@stellar/stellar-sdk';
import { TESTNET_PASSPHRASE, TESTNET_USDC_ISSUER } from '@farebox/stellar';
import { createDevnet, startDevnet, type Devnet } from '@farebox/devnet';
import { httpsProxy, testTls } from '@farebox/test-kit';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let devnet: Devnet;
beforeAll(async () => {
  devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant', passphrase: 'testnet', tls: testTls() });
});
afterAll(async () => {
  await devnet?.close();
});

describe('a devnet under the testnet passphrase, over https', () => {
  it("reports the testnet passphrase and x402 network, with testnet's own USDC contract (what stock x402 clients allow)", async () => {
    expect(devnet.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(devnet.network).toMatchObject({ passphrase: TESTNET_PASSPHRASE, x402Network: 'stellar:testnet' });
    // Circle's testnet USDC: the contract id every testnet wallet and x402 client knows.
    expect(devnet.network.usdc).toMatchObject({ issuer: TESTNET_USDC_ISSUER, contractId: 'CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA' });
    // A stock rpc.Server without allowHttp reaches it (the run trusts the test certificate).
    const server = new rpc.Server(devnet.rpcUrl);
    expect((await server.getNetwork()).passphrase).toBe(TESTNET_PASSPHRASE);
  });

  it('funds an account through its https friendbot', async () => {
    const addr = 'GCNY5OXYSY4FKHOPT2SPOQZAOEIGXB5LBYW3HVU3OWSTQITS65M5RCNY';
    const res = await fetch(`${devnet.friendbotUrl}?addr=${addr}`);
    expect(res.status).toBe(200);
    expect(devnet.chain.accounts.get(addr)?.balance).toBe(10_000n * 10_000_000n);
  });

  it('refuses the mainnet passphrase and keeps the local one by default', () => {
    expect(() => createDevnet({ passphrase: 'Public Global Stellar Network ; September 2015' })).toThrow(
      'the devnet passphrase must not be the mainnet one (its signatures would be valid on the public network)',
    );
    const local = createDevnet({ closeIntervalMs: 'instant' });
    expect(local.network).toMatchObject({ passphrase: 'Standalone Network ; February 2017', x402Network: 'stellar:local' });
    const literal = createDevnet({ closeIntervalMs: 'instant', passphrase: 'Farebox Test ; 2026' });
    expect(literal.chain.passphrase).toBe('Farebox Test ; 2026');
  });
});

describe('a data directory keeps its network', () => {
  it('refuses to load data made under another passphrase, naming the one to use', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'farebox-devnet-passphrase-'));
    try {
      const local = createDevnet({ closeIntervalMs: 'instant', dataDir: dir });
      await local.close();
      expect(() => createDevnet({ closeIntervalMs: 'instant', dataDir: dir, passphrase: 'testnet' })).toThrow(
        `the devnet data in ${dir} belongs to the network "Standalone Network ; February 2017", not "Test SDF Network ; September 2015": start with FAREBOX_DEVNET_PASSPHRASE="local" (--passphrase) to keep it, or with another data directory`,
      );
      const again = createDevnet({ closeIntervalMs: 'instant', dataDir: dir, passphrase: 'local' });
      expect(again.stats().accounts).toBe(2);
      await again.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('httpsProxy in front of an embedded (http) devnet', () => {
  let host: Server;
  let proxy: Awaited<ReturnType<typeof httpsProxy>>;
  afterAll(async () => {
    await proxy?.close();
    await new Promise((r) => host?.close(r));
  });

  it('serves the devnet mounted under /devnet over https', async () => {
    const core = createDevnet({ closeIntervalMs: 'instant', passphrase: 'testnet' });
    host = createServer((req, res) => {
      if (req.url?.startsWith('/devnet')) {
        req.url = req.url.slice('/devnet'.length) || '/';
        return core.handler(req, res);
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => host.listen(0, '127.0.0.1', () => r()));
    const port = (host.address() as { port: number }).port;
    proxy = await httpsProxy(`http://127.0.0.1:${port}`);
    const server = new rpc.Server(`${proxy.url}/devnet/soroban/rpc`);
    expect((await server.getNetwork()).passphrase).toBe(TESTNET_PASSPHRASE);
    expect((await server.getLatestLedger()).sequence).toBe(core.chain.latest.seq);
  });
});
