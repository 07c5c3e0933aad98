import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { freePort, spawnGateway, type GatewayProcess } from './process-kit.js';

const spawned: GatewayProcess[] = [];
afterAll(() => {
  for (const p of spawned) p.child.kill('SIGKILL');
});

describe('loadConfig: the gateway host reads its environment once', () => {
  it('takes the listen address, the log settings and the network, and passes the rest on', () => {
    const env = { HOST: '0.0.0.0', PORT: '9000', FAREBOX_LOG_LEVEL: 'debug', FAREBOX_LOG_PRETTY: 'false', STELLAR_NETWORK: 'local', FAREBOX_SIGNUP_CREDIT: '1' };
    const c = loadConfig(env, true);
    expect(c.options).toMatchObject({ host: '0.0.0.0', port: 9000 });
    expect(c.options.env).toBe(env);
    expect(c.network).toBe('local');
    expect(c.log).toEqual({ level: 'debug', pretty: false });
    expect(loadConfig({}, true)).toMatchObject({ network: 'testnet', log: { level: 'info', pretty: true } });
    expect(loadConfig({ FAREBOX_NETWORK: 'mainnet' }).network).toBe('mainnet');
    expect(loadConfig({ FAREBOX_LOG_LEVEL: 'loud' }).log.level).toBeUndefined();
  });
});

describe('farebox-gateway and its one network variable', () => {
  it('runs on testnet when no network is named (and so wants a keystore key)', async () => {
    const p = spawnGateway({ PORT: String(await freePort()), FAREBOX_DATA_DIR: await mkdtemp(join(tmpdir(), 'farebox-net-')), STELLAR_NETWORK: '' });
    spawned.push(p);
    expect(await p.exited).toBe(1);
    expect(p.output()).toContain('testnet needs FAREBOX_KEYSTORE_KEY');
  });

  it('still honours the deprecated FAREBOX_NETWORK, and says so at start', async () => {
    const p = spawnGateway({ PORT: String(await freePort()), FAREBOX_DATA_DIR: await mkdtemp(join(tmpdir(), 'farebox-net-')), FAREBOX_NETWORK: 'local', FAREBOX_LOG_LEVEL: 'warn' });
    spawned.push(p);
    const url = await p.started;
    expect((await (await fetch(`${url}/v1/platform/key`)).json()).network).toBe('local');
    // Log lines are written in batches (at most 100 ms late).
    const said = 'FAREBOX_NETWORK is deprecated: set STELLAR_NETWORK instead (same values)';
    for (let i = 0; i < 40 && !p.output().includes(said); i++) await new Promise((r) => setTimeout(r, 50));
    expect(p.output()).toContain(said);
  });
});
