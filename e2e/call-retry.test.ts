import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpProxy, startStack, type HttpProxy, type KitUser, type Stack } from '@farebox/gateway/testing';
import { runFarebox } from './cli.js';
import { ensureBuilt, startAdapter, type RunningAdapter } from './mcp-adapter.js';

// `farebox call` and the stdio adapter's call_agent through a loopback proxy
// that loses the gateway's answers: each paid call carries an
// Idempotency-Key, a lost answer is asked for again under it, and the call is
// charged once.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('paid calls of the CLI and the stdio adapter survive a lost answer', () => {
  let h: Stack;
  let proxy: HttpProxy;
  /** Answers the proxy loses: one entry per POST /v1/call to lose, in order. */
  let losses = 0;
  /** The Idempotency-Key of every POST /v1/call the proxy saw. */
  const keys: Array<string | undefined> = [];
  const adapters: RunningAdapter[] = [];

  beforeAll(async () => {
    ensureBuilt();
    h = await startStack();
    await h.publish('echo', '0.01');
    proxy = await startHttpProxy(h.url, (req) => {
      if (req.method !== 'POST' || req.url !== '/v1/call') return;
      keys.push(req.headers['idempotency-key'] as string | undefined);
      if (losses > 0) {
        losses--;
        return 'drop-answer';
      }
    });
  }, 180_000);

  afterAll(async () => {
    for (const a of adapters) await a.close().catch(() => undefined);
    await proxy?.close();
    await h?.close();
  });

  const credits = async (u: KitUser) => (await u.api('/v1/balance')).body.balance_base_units as number;
  const callsOf = async (u: KitUser) => ((await u.api('/v1/transactions')).body as Array<{ type: string }>).filter((t) => t.type === 'call').length;
  async function cliEnv(u: KitUser): Promise<Record<string, string>> {
    const dir = await mkdtemp(join(tmpdir(), 'farebox-cli-call-'));
    return {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      FAREBOX_CONFIG_DIR: join(dir, 'farebox'),
      FAREBOX_URL: proxy.url,
      FAREBOX_API_KEY: u.key,
      BROWSER: 'none',
    };
  }

  it('farebox call: one lost answer is asked again under the same key and charged once; two name the command that finds out', async () => {
    const u = await h.user();
    const env = await cliEnv(u);
    const before = await credits(u);
    keys.length = 0;
    losses = 1;
    const once = await runFarebox(['call', 'echo', '{"n":1}', '--json'], { env });
    expect(once.code, once.stderr).toBe(0);
    expect(JSON.parse(once.stdout)).toMatchObject({ result: { echo: { n: 1 } }, cost: { lamports: 100_000 } });
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(UUID);
    expect(keys[1]).toBe(keys[0]);
    expect(await credits(u)).toBe(before - 100_000);
    expect(await callsOf(u)).toBe(1);

    keys.length = 0;
    losses = 2;
    const lost = await runFarebox(['call', 'echo', '{"n":2}'], { env });
    expect(lost.code).toBe(1);
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
    expect(lost.stderr).toContain(`To see what became of this call without paying twice, run: farebox call echo '{"n":2}' --idempotency-key ${keys[0]}`);
    const check = await runFarebox(['call', 'echo', '{"n":2}', '--idempotency-key', keys[0]!, '--json'], { env });
    expect(check.code, check.stderr).toBe(0);
    expect(JSON.parse(check.stdout)).toMatchObject({ result: { echo: { n: 2 } } });
    // The lost call was charged, once: the command answered it without a second charge.
    expect(await credits(u)).toBe(before - 200_000);
    expect(await callsOf(u)).toBe(2);
  });

  it('farebox-mcp (API key): call_agent whose answer was lost is asked again under the same key, and charged once', async () => {
    const u = await h.user();
    const a = await startAdapter({ FAREBOX_URL: proxy.url, FAREBOX_API_KEY: u.key, FAREBOX_TOKEN_PATH: join(tmpdir(), `never-${Date.now()}.json`) });
    adapters.push(a);
    const before = await credits(u);
    keys.length = 0;
    losses = 1;
    const call = await a.client.callTool({ name: 'call_agent', arguments: { service: 'echo', payload: { hello: 'again' } } });
    expect(call.isError).toBeFalsy();
    expect(call.structuredContent).toMatchObject({ service: 'echo', result: { echo: { hello: 'again' } }, cost: { lamports: 100_000 } });
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(UUID);
    expect(keys[1]).toBe(keys[0]);
    expect(await credits(u)).toBe(before - 100_000);
    expect(await callsOf(u)).toBe(1);
  });
});
