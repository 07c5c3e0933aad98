import { defineSettings, oneOfSetting, SHARED_SETTINGS, textSetting } from '@farebox/protocol';

/**
 * Every variable the `farebox` CLI reads, declared once (meaning, default,
 * values, zod parse): `cliSettingsFromEnv` (context.ts) reads the environment
 * against it, and docs/configuration.md is generated from it. `farebox dev`
 * and `farebox discovery` pass the whole environment on to the programs they
 * start, which read their own.
 */
const network = oneOfSetting(['local', 'testnet', 'mainnet']);

export const CLI_SETTINGS = defineSettings({
  FAREBOX_URL: {
    meaning: 'The gateway, unless `--url` names one (or `farebox login` stored one).',
    kind: textSetting('an http(s) URL'),
    default: '`http://127.0.0.1:8787`',
  },
  FAREBOX_API_KEY: {
    meaning: 'The credential, unless `--api-key` gives one (or `farebox login` stored one).',
    kind: textSetting('an API key (`sk_live_…`)'),
    default: 'unset',
    secret: true,
  },
  FAREBOX_CONFIG_DIR: {
    meaning: 'Where `farebox login` keeps `cli.json` and the OAuth token.',
    kind: textSetting('a folder'),
    default: '`~/.config/farebox` (`$XDG_CONFIG_HOME/farebox`, `%APPDATA%\\farebox` on Windows)',
  },
  FAREBOX_CLIENT_NAME: { meaning: 'The name the browser sign-in registers (shown on the consent page).', kind: textSetting(), fallback: 'farebox CLI' },
  BROWSER: {
    meaning: '`none` turns off opening a browser for the sign-in (the URL is still printed).',
    kind: textSetting('`none`, or anything else'),
    default: 'unset: the system browser',
  },
  TRUSTLESS_WORK_API_KEY: {
    meaning: "The escrow provider's key for direct calls (`farebox call --direct`), unless `--escrow-key` gives one.",
    kind: textSetting(),
    default: 'unset (`farebox-cli` on the devnet)',
    secret: true,
  },
  DATABASE_URL: {
    meaning: "The gateway's PostgreSQL database, which `farebox operator grant` opens.",
    kind: textSetting('a `postgres://` URL'),
    default: "unset: the gateway's PGlite in `$FAREBOX_DATA_DIR/db`",
    secret: true,
  },
  FAREBOX_DATA_DIR: {
    ...SHARED_SETTINGS.FAREBOX_DATA_DIR,
    meaning: "The gateway's data folder, for `farebox operator grant` and `farebox dev`.",
    fallback: './.farebox',
  },
  STELLAR_NETWORK: {
    ...SHARED_SETTINGS.STELLAR_NETWORK,
    meaning: "The network of `farebox dev`'s stack (passed on to it) and of direct calls.",
    kind: network,
    default: '`local` for `farebox dev`',
  },
  FAREBOX_NETWORK: { ...SHARED_SETTINGS.FAREBOX_NETWORK, kind: network },
  FAREBOX_ALLOW_LOOPBACK_ENDPOINTS: {
    meaning: "Passed on to `farebox dev`'s gateway: services on localhost may be registered (the gateway's variable).",
    kind: textSetting('`true` or `false`'),
    default: '`true` for `farebox dev`',
  },
  FAREBOX_ALLOW_MODEL_DOWNLOAD: {
    ...SHARED_SETTINGS.FAREBOX_ALLOW_MODEL_DOWNLOAD,
    meaning: "Passed on to `farebox dev`'s gateway: a missing search model downloads in the background where the network allows.",
    kind: textSetting('`true` or `false`'),
    default: '`true` for `farebox dev`',
  },
  FAREBOX_DEVNET_PASSPHRASE: {
    ...SHARED_SETTINGS.FAREBOX_DEVNET_PASSPHRASE,
    default: '`testnet` for a new `farebox dev` stack (x402 `exact` works), else the one its devnet was made under',
  },
  FAREBOX_MODEL_HUB_URL: {
    ...SHARED_SETTINGS.FAREBOX_MODEL_HUB_URL,
    meaning: '`farebox model fetch` downloads the search model from there, unless `--hub` names one.',
  },
  PATH: { meaning: 'Where `farebox dev` and `farebox discovery` look for the programs they start.', kind: textSetting(), fallback: '' },
});
