import { StrKey } from '@stellar/stellar-sdk';
import { defineSettings, intSetting, oneOfSetting, settingKind, SHARED_SETTINGS, textSetting, urlSetting } from '@farebox/protocol';

/**
 * Every variable `farebox-discovery` reads, declared once (meaning, default,
 * values, zod parse): `loadDiscoveryConfig` (server.ts) reads the environment
 * against it, and docs/configuration.md is generated from it.
 */
const got = (name: string, text: string, what: string) => `${name} must be ${what}, got ${JSON.stringify(text)}`;
const int = (min: number) => intSetting({ min, message: (name, text) => got(name, text, `an integer >= ${min}`) });
const network = oneOfSetting(['local', 'testnet', 'mainnet'], (_name, text) => got('STELLAR_NETWORK', text, 'local, testnet or mainnet'));

export const DISCOVERY_SETTINGS = defineSettings({
  PORT: { meaning: 'The port the discovery service listens on.', kind: int(0), fallback: 8790 },
  FAREBOX_DISCOVERY_HOST: { meaning: 'The address it listens on.', kind: textSetting('an address or host name'), fallback: '0.0.0.0' },
  FAREBOX_DISCOVERY_DATA_DIR: {
    meaning: 'Where its snapshots and registry cursor are kept.',
    kind: textSetting('a folder'),
    default: '`$FAREBOX_DATA_DIR/discovery`',
  },
  FAREBOX_DATA_DIR: { ...SHARED_SETTINGS.FAREBOX_DATA_DIR, meaning: 'The data folder `FAREBOX_DISCOVERY_DATA_DIR` defaults under.' },
  STELLAR_NETWORK: { ...SHARED_SETTINGS.STELLAR_NETWORK, meaning: 'The network whose service registry it follows.', kind: network },
  FAREBOX_NETWORK: { ...SHARED_SETTINGS.FAREBOX_NETWORK, kind: network },
  FAREBOX_DEVNET_URL: { ...SHARED_SETTINGS.FAREBOX_DEVNET_URL, meaning: 'The devnet to follow on the `local` network.', default: 'required on `local`' },
  STELLAR_RPC_URL: SHARED_SETTINGS.STELLAR_RPC_URL,
  STELLAR_CONTRACT_ID: SHARED_SETTINGS.STELLAR_CONTRACT_ID,
  FAREBOX_MODEL_DIR: SHARED_SETTINGS.FAREBOX_MODEL_DIR,
  FAREBOX_ALLOW_MODEL_DOWNLOAD: SHARED_SETTINGS.FAREBOX_ALLOW_MODEL_DOWNLOAD,
  FAREBOX_MODEL_HUB_URL: SHARED_SETTINGS.FAREBOX_MODEL_HUB_URL,
  FAREBOX_DISCOVERY_VECTOR_INDEX: {
    meaning: 'The approximate vector index: `hnsw` (a graph, saved with the snapshots) or `flat` (an exact scan).',
    kind: oneOfSetting(['hnsw', 'flat']),
    fallback: 'hnsw',
  },
  FAREBOX_DISCOVERY_POLL_MS: { meaning: "How often the registry's events are read (ms).", kind: int(10), fallback: 100 },
  FAREBOX_DISCOVERY_SNAPSHOT_MS: { meaning: 'The snapshot interval when something changed (ms; 0: only at shutdown).', kind: int(0), fallback: 30000 },
  FAREBOX_DISCOVERY_RATE_LIMIT: {
    meaning: 'Requests per minute and client IP (`/health` not counted; counted per replica); 0 turns it off.',
    kind: int(0),
    fallback: 600,
  },
  FAREBOX_TRUST_PROXY: {
    meaning: 'Behind one proxy: the client IP is the last `X-Forwarded-For` entry.',
    kind: settingKind('`1` or `true` turns it on; any other value is off', (text) => text === '1' || text === 'true'),
    fallback: false,
  },
  FAREBOX_TREASURY_ADDRESS: {
    meaning:
      "The platform treasury's address (the gateway's `GET /v1/platform/key` `treasury`): `payTo` of the `exact` offers in the x402 bazaar listing on testnet/pubnet, and the escrows' platform address; without it the listing offers escrow only (docs/search.md).",
    kind: settingKind('a `G...` public key', (text, name, problem) =>
      StrKey.isValidEd25519PublicKey(text) ? text : problem(got(name, text, 'a G... public key')),
    ),
    default: 'unset',
  },
  FAREBOX_HEALTH_FEED_URL: {
    meaning:
      "The gateway's health feed, `<gateway>/discovery/health`: with it every service listed and searched carries its `health`, and search weighs relevance by it, as the gateway's does; a read that fails keeps the last figures.",
    kind: urlSetting((name, text) => got(name, text, "an http(s) URL (the gateway's /discovery/health)")),
    default: 'unset',
  },
  FAREBOX_HEALTH_FEED_MS: { meaning: 'How often the health feed is read (ms).', kind: int(1000), fallback: 30000 },
});
