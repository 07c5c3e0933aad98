// The access log of a local gateway (embedded devnet): the devnet's traffic
// under /devnet (the mirror's polling among it) is the host's and written at
// debug, users' requests at info. The handler's own lines (health probes,
// refused requests) are tested in process: packages/gateway-http/test/access-log.test.ts.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createLogger, type LogLevel } from '@farebox/gateway-core';
import { loadConfig } from '../src/config.js';
import { startGateway, type RunningGateway } from '../src/server.js';
import { eventually } from '@farebox/test-kit';

let gw: RunningGateway;
const lines: Array<Record<string, unknown>> = [];
const requests = (level?: LogLevel) => lines.filter((l) => l.event === 'request' && (level === undefined || l.level === level));

beforeAll(async () => {
  gw = await startGateway({
    port: 0,
    network: 'local',
    dataDir: await mkdtemp(join(tmpdir(), 'farebox-access-log-')),
    devnetInMemory: true,
    devnetCloseIntervalMs: 'instant',
    dashboard: false,
    env: {},
    logger: createLogger({ level: 'debug', destination: { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) } }),
  });
}, 60_000);
afterAll(async () => {
  await gw?.close();
});

it('writes the embedded devnet traffic at debug and users requests at info', async () => {
  await fetch(`${gw.url}/devnet/soroban/rpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"jsonrpc":"2.0","id":1,"method":"getHealth"}',
  });
  await fetch(`${gw.url}/v1/platform/key`);
  await eventually('the platform key request is logged', () => requests().some((r) => r.route === '/v1/platform/key'));

  // The catalog mirror polls the embedded devnet by itself: those lines are debug too.
  const debug = requests('debug');
  expect(debug.some((r) => r.route === '/devnet/*' && r.method === 'POST')).toBe(true);
  expect(new Set(debug.map((r) => r.route))).toEqual(new Set(['/devnet/*']));
  const info = requests('info');
  expect(info.map((r) => r.route)).toEqual(['/v1/platform/key']);
  expect(requests().some((r) => r.route === 'unmatched')).toBe(false);
});

it('prints readable lines in colour on a terminal, or when the reader asks for colour (FORCE_COLOR, as npm start does), never with NO_COLOR', () => {
  expect(loadConfig({}, false).log).toMatchObject({ pretty: false, colors: false });
  expect(loadConfig({}, true).log).toMatchObject({ pretty: true, colors: true });
  expect(loadConfig({ FAREBOX_LOG_PRETTY: 'true' }, false).log).toMatchObject({ pretty: true, colors: false });
  expect(loadConfig({ FAREBOX_LOG_PRETTY: 'true', FORCE_COLOR: '1' }, false).log).toMatchObject({ pretty: true, colors: true });
  expect(loadConfig({ NO_COLOR: '1' }, true).log).toMatchObject({ pretty: true, colors: false });
  expect(loadConfig({ FAREBOX_LOG_PRETTY: 'false', FORCE_COLOR: '1' }, true).log).toMatchObject({ pretty: false, colors: false });
});
