import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startGateway, type RunningGateway } from '../src/index.js';
import { dropTestSchema, startHarness, type Harness, type TestUser } from './harness.js';
import { rawClient } from './oauth-browser.js';

// /mcp is stateless in both protocol eras: two gateways on one PostgreSQL behind one public address (as behind a
// load balancer), and every request of one MCP client sent to the other gateway than the one before.

describe('/mcp on two gateways: each request of a client answered by either one', () => {
  let a: Harness;
  let b: RunningGateway;
  let alice: TestUser;
  const schema = `mcp_instances_${process.pid}_${Date.now()}`;

  beforeAll(async () => {
    const env = { FAREBOX_KEYSTORE_KEY: randomBytes(32).toString('hex') };
    a = await startHarness('postgres', { databaseSchema: schema, env });
    b = await startGateway({
      port: 0,
      network: 'local',
      allowLoopbackEndpoints: true,
      logLevel: 'warn',
      dataDir: await mkdtemp(join(tmpdir(), 'farebox-mcp-b-')),
      databaseUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
      databaseSchema: schema,
      // The same public address: tokens are issued for {base_url}/mcp, whichever gateway checks them.
      baseUrl: a.url,
      devnetUrl: `${a.url}/devnet`,
      embedDevnet: false,
      rateLimits: { authPerMinute: 1000 },
      env,
    });
    alice = await a.user();
    await a.publish('echo', { price: '0.01' });
    await a.publish('pricey', { price: '0.25' });
    await b.core.mirror.syncOnce();
  }, 180_000);

  afterAll(async () => {
    await b?.close();
    await a?.close();
    await dropTestSchema(schema);
  });

  const credits = async (): Promise<number> => (await alice.api('/v1/balance')).body.balance_base_units;

  /** A fetch with the token that sends each request to the other gateway than the last, and records who answered what. */
  function alternating(token: string) {
    const answered: Array<{ gateway: 'a' | 'b'; method: string; status: number; session: string | null }> = [];
    let n = 0;
    const doFetch: typeof fetch = async (input, init) => {
      const gateway = n++ % 2 === 0 ? 'a' : 'b';
      const url = new URL(input instanceof Request ? input.url : String(input));
      if (gateway === 'b') url.host = new URL(b.url).host;
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${token}`);
      const r = await fetch(url, { ...init, headers });
      answered.push({ gateway, method: init?.method ?? 'GET', status: r.status, session: r.headers.get('mcp-session-id') });
      return r;
    };
    return { doFetch, answered };
  }

  it('2026-07-28 and the 2025-11-25 handshake: tools and a paid call with requests split over both gateways; no session id', async () => {
    const { tokens } = await (await rawClient(a.url)).authorize(alice);
    for (const options of [{ versionNegotiation: { mode: { pin: '2026-07-28' } } }, { versionNegotiation: { mode: 'legacy' } }] as const) {
      const { doFetch, answered } = alternating(tokens.access_token);
      const client = new Client({ name: 'split', version: '1.0.0' }, options);
      await client.connect(new StreamableHTTPClientTransport(new URL(`${a.url}/mcp`), { fetch: doFetch }));
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['list_agents', 'call_agent', 'get_balance', 'get_transactions']);
      const before = await credits();
      const call = await client.callTool({ name: 'call_agent', arguments: { service: 'echo', payload: { split: true } } });
      expect(call.isError).toBeFalsy();
      expect(call.structuredContent).toMatchObject({ result: { echo: { split: true } }, cost: { base_units: 100_000 } });
      expect(await credits()).toBe(before - 100_000);
      await client.close();
      expect(new Set(answered.map((x) => x.gateway))).toEqual(new Set(['a', 'b']));
      // The 2025 client's GET for a server stream is 405: there is none to open (docs/oauth.md, Endpoints).
      const ok = (x: (typeof answered)[number]) => (x.method === 'GET' ? x.status === 405 : x.status < 300) && x.session === null;
      expect(answered.every(ok), JSON.stringify(answered)).toBe(true);
    }
  });

  it('an elicited confirmation asked by one gateway and answered to the other charges once', async () => {
    // The owner lets the app confirm for them (form-mode elicitation counts only then).
    const { tokens } = await (await rawClient(a.url)).authorize(alice, { fields: { confirm_by_app: 'on' } });
    const { doFetch, answered } = alternating(tokens.access_token);
    const client = new Client(
      { name: 'split confirm', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { elicitation: { form: {} } } },
    );
    let asked = 0;
    client.setRequestHandler('elicitation/create', async () => {
      asked++;
      return { action: 'accept', content: { confirm: true } };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${a.url}/mcp`), { fetch: doFetch }));
    const before = await credits();
    const from = answered.length;
    const call = await client.callTool({ name: 'call_agent', arguments: { service: 'pricey', payload: { n: 1 } } });
    expect(call.isError).toBeFalsy();
    expect(asked).toBe(1);
    // The call (input_required) and its retry with the answer went to different gateways.
    expect(answered.slice(from).map((x) => x.gateway)).toHaveLength(2);
    expect(new Set(answered.slice(from).map((x) => x.gateway)).size).toBe(2);
    expect(await credits()).toBe(before - 2_500_000);
    await client.close();
  });
});
