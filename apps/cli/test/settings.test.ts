import { expect, it } from 'vitest';
import { cliSettingsFromEnv } from '../src/index.js';
import { cli } from './run.js';

// The CLI's variables are declared once (src/settings.ts; docs/configuration.md is generated from it).
it('reads its settings once, with their defaults, and passes the local network on to farebox dev', () => {
  const s = cliSettingsFromEnv({ FAREBOX_URL: 'https://farebox.example', FAREBOX_MODEL_HUB_URL: 'https://mirror.example/', PATH: '/bin' });
  expect(s).toMatchObject({
    url: 'https://farebox.example',
    clientName: 'farebox CLI',
    dataDir: './.farebox',
    modelHubUrl: 'https://mirror.example/',
    path: '/bin',
    devnet: { passphrase: undefined, local: true },
  });
  expect(s.devStackEnv).toMatchObject({ STELLAR_NETWORK: 'local', FAREBOX_ALLOW_LOOPBACK_ENDPOINTS: 'true', FAREBOX_ALLOW_MODEL_DOWNLOAD: 'true' });
  expect(cliSettingsFromEnv({ STELLAR_NETWORK: 'testnet' }).devnet.local).toBe(false);
});

it('stops with every malformed value named (exit 2)', async () => {
  const r = await cli(['whoami'], { env: { STELLAR_NETWORK: 'devnet', FAREBOX_NETWORK: 'main' } });
  expect(r.code).toBe(2);
  expect(r.stderr).toContain(
    'invalid configuration: STELLAR_NETWORK must be local, testnet or mainnet, got "devnet"; FAREBOX_NETWORK must be local, testnet or mainnet, got "main"',
  );
});
