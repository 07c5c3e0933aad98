import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevnet, type Devnet } from '@farebox/devnet';
import { encodeStrKey, randomBytes } from '@farebox/protocol';
import { createProvider } from '@farebox/provider';
import { createAccounts, createRegistryClient, keypairSigner, type RegistryClient, type TxSigner } from '@farebox/stellar';
import { runCli } from '@farebox/cli';
import { createClient, createDiscoveryClient } from '@farebox/client';
import { startGateway, type RunningGateway } from '@farebox/gateway';
import { createLogger } from '@farebox/gateway-core';
import { startDiscovery, type RunningDiscovery } from '@farebox/discovery-service';
import { closedPort, eventually } from '@farebox/test-kit';
import { startReplica } from './discovery-replica.js';

const USDC = 10_000_000n;
type Party = TxSigner & { secret: string };

let devnet: Devnet;
let registry: RegistryClient;
let treasury: Party;
let replicaA: RunningDiscovery;
let replicaB: RunningDiscovery;
let gateway: RunningGateway;
let dirB: string;
const closers: Array<() => Promise<unknown>> = [];

async function party(usdc = 0n): Promise<Party> {
  const secret = encodeStrKey('secretSeed', randomBytes(32));
  const signer = keypairSigner(secret);
  const accounts = createAccounts(devnet.network);
  await accounts.fund(signer.publicKey);
  await accounts.ensureUsdcTrustline(signer);
  if (usdc > 0n) await devnet.mintUsdc(signer.publicKey, usdc);
  return Object.assign(signer, { secret });
}

const replica = (dataDir: string) => startReplica(devnet.url, dataDir);

/** Runs a provider-SDK service on loopback and registers it on chain with the SDK's bootstrap(). */
async function publish(service: string, description: string, owner?: Party) {
  const secret = owner?.secret ?? encodeStrKey('secretSeed', randomBytes(32));
  const port = await closedPort();
  const provider = createProvider({
    service,
    pricePerCall: '0.25',
    description,
    endpoint: `http://127.0.0.1:${port}/`,
    network: 'local',
    devnetUrl: devnet.url,
    wallet: { secret },
    trustlessWork: { apiKey: 'provider-escrow-key', platformAddress: treasury.publicKey, baseUrl: `${devnet.url}/escrow` },
    servedStorePath: join(await mkdtemp(join(tmpdir(), 'farebox-served-')), 'served.json'),
    env: {},
  }).serve((payload) => ({ converted: payload }));
  await provider.listen(port, '127.0.0.1');
  closers.push(() => provider.close());
  const result = await provider.bootstrap();
  expect(result.action).toBe('registered');
  return { owner: keypairSigner(secret), endpoint: `http://127.0.0.1:${port}/` };
}

const names = async (url: string, q: string) =>
  ((await (await fetch(`${url}/search?q=${encodeURIComponent(q)}`)).json()) as { results: Array<{ service: string }> }).results.map((r) => r.service);
let gatewayKey: string;
const gatewayAgents = (q: string) => fetch(`${gateway.url}/v1/agents?q=${encodeURIComponent(q)}`, { headers: { authorization: `Bearer ${gatewayKey}` } });
async function gatewayNames(q: string): Promise<string[]> {
  const res = await gatewayAgents(q);
  const body = (await res.json()) as Array<{ service: string }>;
  if (res.status !== 200) throw new Error(`gateway answered ${res.status}: ${JSON.stringify(body)}`);
  return body.map((r) => r.service);
}

beforeAll(async () => {
  devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant', escrow: { rateLimit: false } });
  registry = createRegistryClient(devnet.network);
  treasury = await party();
  replicaA = await replica(await mkdtemp(join(tmpdir(), 'farebox-disc-a-')));
  dirB = await mkdtemp(join(tmpdir(), 'farebox-disc-b-'));
  replicaB = await replica(dirB);
  gateway = await startGateway({
    port: 0,
    network: 'local',
    devnetUrl: devnet.url,
    dataDir: await mkdtemp(join(tmpdir(), 'farebox-gw-')),
    allowLoopbackEndpoints: true,
    rateLimits: { anonymousPerMinute: 100_000 },
    logger: createLogger({ level: 'warn', destination: { write: () => undefined } }),
    env: { FAREBOX_DISCOVERY_URL: replicaA.url },
  });
  await gateway.core.start();
  // A gateway user (searching through the gateway needs an account; the discovery URL does not).
  const signup = await fetch(`${gateway.url}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'searcher@example.com', password: 'correct horse battery' }),
  });
  const cookie = signup.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const { csrf_token } = (await signup.json()) as { csrf_token: string };
  const created = await fetch(`${gateway.url}/v1/api-keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrf_token },
    body: JSON.stringify({ name: 'search' }),
  });
  gatewayKey = ((await created.json()) as { key: string }).key;
}, 120_000);

afterAll(async () => {
  await gateway?.close();
  await replicaA?.close();
  await replicaB?.close();
  for (const close of closers) await close().catch(() => undefined);
  await devnet?.close();
});

describe('discovery replicas on the devnet', () => {
  it('finds a service the SDK registers on both replicas and through the gateway, and forgets it everywhere after deregistration', async () => {
    const { owner } = await publish('fx-convert', 'Convert an amount between currencies: USD, EUR, GBP, JPY at the daily reference rate');
    for (const r of [replicaA, replicaB])
      await eventually(`fx-convert on ${r.url}`, async () => (await names(r.url, 'currencies rate')).includes('fx-convert'));
    await eventually('fx-convert through the gateway', async () => (await gatewayNames('currencies rate')).includes('fx-convert'));

    // The same answer everywhere: the gateway's ranking is the replica's.
    const [a, b] = await Promise.all([
      fetch(`${replicaA.url}/search?q=currencies`).then((r) => r.json()),
      fetch(`${replicaB.url}/search?q=currencies`).then((r) => r.json()),
    ]);
    expect(a.results).toEqual(b.results);
    expect(a.results[0]).toMatchObject({
      service: 'fx-convert',
      agent: { service: 'fx-convert', ownerWallet: owner.publicKey, pricePerCall: 0.25, pricePerCallBaseUnits: '2500000', acceptedToken: 'USDC' },
    });
    const viaGateway = (await (await gatewayAgents('currencies')).json()) as Array<{ service: string; score: number; ownerWallet: string }>;
    expect(viaGateway[0]).toMatchObject({ service: 'fx-convert', ownerWallet: owner.publicKey, score: Math.round(a.results[0].score * 1e4) / 1e4 });
    const health = await (await fetch(`${gateway.url}/health`)).json();
    expect(health.search).toMatchObject({ mode: 'remote', url: replicaA.url });

    expect(await (await fetch(`${replicaB.url}/agents/fx-convert`)).json()).toMatchObject({ service: 'fx-convert', ownerWallet: owner.publicKey });

    await registry.deregister(owner, 'fx-convert');
    for (const r of [replicaA, replicaB]) {
      await eventually(`fx-convert gone from ${r.url}`, async () => !(await names(r.url, 'currencies rate')).includes('fx-convert'));
      expect((await fetch(`${r.url}/agents/fx-convert`)).status).toBe(404);
    }
    expect(await gatewayNames('currencies rate')).not.toContain('fx-convert');
  });

  it('a replica stopped during registrations catches up from its cursor after a restart, from its snapshot', async () => {
    await publish('geo-lookup', 'Geocode a street address into latitude and longitude');
    await eventually('geo-lookup on B', async () => (await names(replicaB.url, 'geocode address')).includes('geo-lookup'));
    await replicaB.close();

    await publish('pdf-render', 'Render an HTML page into a PDF document');
    const owner = await party();
    await publish('tts-voice', 'Text to speech: a natural voice reads your text aloud', owner);
    await registry.update(owner, 'tts-voice', { description: 'Text to speech in 40 languages, natural voices' });
    await eventually('pdf-render on A', async () => (await names(replicaA.url, 'pdf document')).includes('pdf-render'));
    await eventually('the tts-voice update on A', async () => (await names(replicaA.url, 'languages voices')).includes('tts-voice'));

    replicaB = await replica(dirB);
    const health = await (await fetch(`${replicaB.url}/health`)).json();
    expect(health).toMatchObject({
      ready: true,
      ok: true,
      mode: 'keyword-only',
      mode_reason: expect.stringContaining('embedding model'),
      lag_ledgers: expect.any(Number),
    });
    expect(health.restored_from).toMatchObject({ ledger: expect.any(Number) });
    expect(health.ledger).toBeGreaterThanOrEqual(health.restored_from.ledger);
    expect(await names(replicaB.url, 'geocode address')).toContain('geo-lookup');
    expect(await names(replicaB.url, 'pdf document')).toContain('pdf-render');
    expect(await names(replicaB.url, 'languages voices')).toContain('tts-voice');
    // Both replicas list the same catalog (each follows the chain on its own: compared once both have read the same events).
    const listing = async (r: RunningDiscovery) => JSON.stringify((await (await fetch(`${r.url}/agents?limit=1000`)).json()).agents);
    await eventually('the same catalog on both replicas', async () => (await listing(replicaA)) === (await listing(replicaB)));
    expect(JSON.parse(await listing(replicaB)).map((a: { service: string }) => a.service)).toEqual(
      expect.arrayContaining(['geo-lookup', 'pdf-render', 'tts-voice']),
    );
  });

  it('never lists or finds a registry name that breaks the service-name policy (written to the contract directly), logs it once, counts it in /health, and goes on', async () => {
    const logged: string[] = [];
    const replicaC = await startReplica(devnet.url, await mkdtemp(join(tmpdir(), 'farebox-disc-c-')), { log: (m) => void logged.push(m) });
    closers.push(() => replicaC.close());
    const owner = await party();
    const deceptive = ['\u0435cho-rates', 'echo-rates\u200b', 'ECHO-RATES', 'echo-rates ', '\u202eohce', 'Qa Y!', 'echo_rates', 'a\u0000b'];
    for (const service of deceptive)
      await registry.register(owner, { service, pricePerCall: 1000n, endpoint: 'http://127.0.0.1:9/', description: 'echo rates look-alike' });
    // A good name written after them: the replicas read past the bad ones.
    await registry.register(owner, { service: 'echo-rates', pricePerCall: 1000n, endpoint: 'http://127.0.0.1:9/', description: 'echo rates' });
    for (const r of [replicaA, replicaB, replicaC]) {
      await eventually(`echo-rates on ${r.url}`, async () => (await names(r.url, 'echo rates')).includes('echo-rates'));
      expect(await names(r.url, 'echo rates look-alike')).toEqual(['echo-rates']);
      const all = ((await (await fetch(`${r.url}/agents?limit=1000`)).json()) as { agents: Array<{ service: string }> }).agents.map((a) => a.service);
      for (const service of deceptive) {
        expect(all, JSON.stringify(service)).not.toContain(service);
        expect((await fetch(`${r.url}/agents/${encodeURIComponent(service)}`)).status, JSON.stringify(service)).toBeGreaterThanOrEqual(400);
      }
      const health = await (await fetch(`${r.url}/health`)).json();
      expect(health).toMatchObject({ ok: true, sync_failures: 0, skipped_services: deceptive.length });
    }
    expect(logged.filter((l) => l.includes('skipped: invalid service name'))).toHaveLength(deceptive.length);
    expect(logged).toContain(
      'registry entry "\\u0435cho-rates" skipped: invalid service name: use 1 to 32 lower-case letters, digits and single hyphens, starting and ending with a letter or digit',
    );
    // Through a gateway searching with this backend: the same.
    expect(await gatewayNames('echo rates look-alike')).toEqual(['echo-rates']);
  });

  it('a direct caller finds a service through the discovery URL and pays it through the x402 escrow, with no gateway account', async () => {
    const { owner } = await publish('eur-usd', 'Exchange rates: convert euros to US dollars');
    const discovery = createDiscoveryClient({ url: replicaB.url, env: {} });
    const found = await eventually('eur-usd in discovery', async () =>
      (await discovery.search('convert euros dollars')).results.find((r) => r.service === 'eur-usd'),
    );
    expect(found.agent).toMatchObject({ ownerWallet: owner.publicKey, pricePerCallBaseUnits: 2_500_000n });
    expect((await discovery.listAllServices()).map((s) => s.service)).toContain('eur-usd');
    expect(await discovery.getService('no-such-service')).toBeUndefined();

    const payer = await party(5n * USDC);
    const usdcOf = (a: string) => devnet.chain.accounts.get(a)?.usdc?.balance ?? 0n;
    const before = usdcOf(payer.publicKey);
    const client = createClient({
      network: 'local',
      devnetUrl: devnet.url,
      secret: payer.secret,
      escrow: { apiKey: 'client-escrow-key', budget: { requests: 100_000, windowMs: 1000 } },
      platformAddress: treasury.publicKey,
      env: {},
    });
    const out = await client.call(found.service, { amount: 100 });
    expect(out.result).toEqual({ converted: { amount: 100 } });
    expect(out.cost.baseUnits).toBe(found.agent.pricePerCallBaseUnits);
    expect(out.releaseTx).toMatch(/^[0-9a-f]{64}$/);
    expect(usdcOf(payer.publicKey)).toBe(before - 2_500_000n);
  });
});

describe('farebox search --discovery', () => {
  it('searches a discovery backend with no account (human and --json output), and says what is wrong with a bad URL', async () => {
    const cli = async (args: string[]) => {
      let stdout = '';
      let stderr = '';
      const code = await runCli(args, {
        env: { FAREBOX_CONFIG_DIR: await mkdtemp(join(tmpdir(), 'farebox-cli-')) },
        stdout: (t) => (stdout += t),
        stderr: (t) => (stderr += t),
      });
      return { code, stdout, stderr };
    };
    const json = await cli(['search', 'pdf document', '--discovery', replicaA.url, '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ mode: 'keyword-only', results: [{ service: 'pdf-render', agent: { pricePerCallBaseUnits: '2500000' } }] });
    const human = await cli(['search', 'pdf document', '--discovery', replicaA.url]);
    expect(human.stdout).toMatch(/^SERVICE\s+SCORE\s+PRICE/m);
    expect(human.stdout).toMatch(/^pdf-render\s+[\d.]+\s+0\.25 USDC\s+Render an HTML page/m);
    const listed = await cli(['search', '--discovery', replicaA.url, '--json']);
    expect((JSON.parse(listed.stdout) as Array<{ service: string }>).map((s) => s.service)).toEqual(
      expect.arrayContaining(['geo-lookup', 'pdf-render', 'tts-voice']),
    );
    const badLimit = await cli(['search', 'pdf', '--discovery', replicaA.url, '--limit', '0']);
    expect(badLimit).toMatchObject({ code: 1, stderr: expect.stringContaining('invalid limit (must be an integer from 1 to 100)') });
    const badUrl = await cli(['search', 'pdf', '--discovery', 'ftp://nowhere']);
    expect(badUrl).toMatchObject({ code: 2, stderr: expect.stringContaining('--discovery must be an http(s) URL') });
  });
});

describe('discovery HTTP API', () => {
  it('refuses bad input with exact messages, pages the catalog, answers CORS preflights', async () => {
    const get = async (path: string) => {
      const res = await fetch(`${replicaA.url}${path}`);
      return { status: res.status, body: await res.json().catch(() => null), headers: res.headers };
    };
    expect(await get('/search')).toMatchObject({ status: 400, body: { error: 'q required' } });
    expect(await get('/search?q=%20')).toMatchObject({ status: 400, body: { error: 'q required' } });
    expect(await get(`/search?q=${'a'.repeat(513)}`)).toMatchObject({ status: 400, body: { error: 'query too long (max 512)' } });
    for (const bad of ['0', '101', 'ten', '1.5', '-1', ''])
      expect(await get(`/search?q=pdf&limit=${bad}`)).toMatchObject({ status: 400, body: { error: 'invalid limit (must be an integer from 1 to 100)' } });
    expect(await get('/search?q=pdf&sort=asc')).toMatchObject({ status: 400, body: { error: 'unknown parameter: sort' } });
    expect(await get('/search?q=pdf&q=geo')).toMatchObject({ status: 400, body: { error: 'parameter given more than once: q' } });
    expect(await get('/agents?limit=1001')).toMatchObject({ status: 400, body: { error: 'invalid limit (must be an integer from 1 to 1000)' } });
    expect(await get(`/agents/${'x'.repeat(33)}`)).toMatchObject({ status: 400, body: { error: 'service name too long (max 32)' } });
    expect(await get('/agents/%E0%A4%A')).toMatchObject({ status: 400, body: { error: 'invalid service name (bad percent-encoding)' } });
    expect(await get('/agents/nope')).toMatchObject({ status: 404, body: { error: 'service not found' } });
    expect(await get('/nope')).toMatchObject({ status: 404, body: { error: 'not found' } });
    const post = await fetch(`${replicaA.url}/search?q=x`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(await post.json()).toEqual({ error: 'method not allowed' });

    const all = (await get('/agents?limit=1000')).body;
    expect(all.total).toBeGreaterThanOrEqual(3);
    const first = (await get('/agents?limit=2')).body;
    expect(first.agents).toEqual(all.agents.slice(0, 2));
    expect(first.next).toBe(all.agents[1].service);
    const second = (await get(`/agents?limit=2&after=${first.next}`)).body;
    expect(second.agents).toEqual(all.agents.slice(2, 4));

    const ok = await get('/search?q=pdf');
    expect(ok.headers.get('access-control-allow-origin')).toBe('*');
    const pre = await fetch(`${replicaA.url}/search?q=pdf`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'GET' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-methods')).toContain('GET');
  });

  it('limits requests per IP (429 with Retry-After), /health excepted', async () => {
    let now = 1_000_000;
    const limited = await startDiscovery({
      port: 0,
      host: '127.0.0.1',
      dataDir: await mkdtemp(join(tmpdir(), 'farebox-disc-rl-')),
      network: 'local',
      devnetUrl: devnet.url,
      env: {},
      vectorIndex: 'flat',
      rateLimitPerMinute: 3,
      now: () => now,
    });
    try {
      for (let i = 0; i < 3; i++) expect((await fetch(`${limited.url}/search?q=pdf`)).status).toBe(200);
      const res = await fetch(`${limited.url}/search?q=pdf`);
      expect(res.status).toBe(429);
      expect(await res.json()).toEqual({ error: 'rate limit exceeded (3 requests per minute)' });
      expect(res.headers.get('retry-after')).toBe('60');
      expect((await fetch(`${limited.url}/health`)).status).toBe(200);
      now += 60_000;
      expect((await fetch(`${limited.url}/agents`)).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});

describe('a gateway whose discovery backend is down', () => {
  it('answers searches with 500 and the reason (nothing else changes), lists without a query, and says so in /health', async () => {
    await replicaA.close();
    const res = await gatewayAgents('pdf document');
    expect(res.status).toBe(500);
    expect(((await res.json()) as { error: string }).error).toMatch(/^discovery backend unreachable: /);
    // The listing comes from the gateway's own mirror (it polls the registry itself).
    await eventually('pdf-render listed by the gateway', async () => {
      const listed = await fetch(`${gateway.url}/v1/agents`, { headers: { authorization: `Bearer ${gatewayKey}` } });
      return listed.status === 200 && ((await listed.json()) as Array<{ service: string }>).some((a) => a.service === 'pdf-render');
    });
    const health = await (await fetch(`${gateway.url}/health`)).json();
    expect(health.search).toMatchObject({ mode: 'remote', lastError: expect.stringMatching(/^discovery backend unreachable/) });
  });
});
