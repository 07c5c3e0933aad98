import { defineSettings, oneOfSetting, onWhenTrueSetting, textSetting, urlSetting } from './settings.js';

/**
 * The settings several hosts and SDKs read with one meaning: the settlement
 * network and its overrides (read by `resolveNetwork` of `@farebox/stellar`,
 * the gateway, the discovery service, the provider and caller SDKs), the
 * data folder and the search model. A host takes the ones it reads, and may
 * say more of a default that is its own (`{ ...SHARED_SETTINGS.X, default }`).
 */
export const SHARED_SETTINGS = defineSettings({
  STELLAR_NETWORK: {
    meaning:
      'The settlement network: `local` (the devnet), `testnet` or `mainnet`. One variable and one default for the gateway, the SDKs and `@farebox/stellar`; `npm start` and `farebox dev` set `local`.',
    kind: oneOfSetting(['local', 'testnet', 'mainnet']),
    default: '`testnet`',
  },
  FAREBOX_NETWORK: {
    meaning: 'The older name of `STELLAR_NETWORK`: still read, with a warning at start, and refused when it disagrees with `STELLAR_NETWORK`.',
    kind: oneOfSetting(['local', 'testnet', 'mainnet']),
    deprecated: '`STELLAR_NETWORK`',
  },
  STELLAR_RPC_URL: {
    meaning: "The Soroban RPC server, instead of the network preset's (a private network, the devnet in tests).",
    kind: textSetting('an http(s) URL'),
    default: "the network's preset (the devnet's on `local`)",
  },
  STELLAR_HORIZON_URL: {
    meaning: "The Horizon server, instead of the network preset's.",
    kind: textSetting('an http(s) URL'),
    default: "the network's preset (the devnet's on `local`)",
  },
  STELLAR_FRIENDBOT_URL: {
    meaning:
      "The friendbot that funds new accounts with XLM, instead of the preset's; `none` turns a preset's friendbot off (a private network run like mainnet).",
    kind: textSetting('an http(s) URL, or `none`'),
    default: "the network's preset (none on `mainnet`)",
  },
  STELLAR_CONTRACT_ID: {
    meaning: "The service registry contract, instead of the preset's.",
    kind: textSetting('a `C...` contract id'),
    default: "the network's preset (the devnet's on `local`)",
  },
  STELLAR_USDC_ISSUER: {
    meaning: "The USDC issuer, instead of the preset's (Circle's on testnet and mainnet).",
    kind: textSetting('a `G...` public key'),
    default: "the network's preset",
  },
  STELLAR_NETWORK_PASSPHRASE: {
    meaning: "The network passphrase, instead of the preset's (on `local`, it wins over `FAREBOX_DEVNET_PASSPHRASE`).",
    kind: textSetting(),
    default: "the network's preset",
  },
  STELLAR_EXPLORER_URL: {
    meaning: 'Where links to transactions and accounts point (`<url>/tx/<hash>`, `<url>/account/<address>`).',
    kind: textSetting('an http(s) URL'),
    default: "the network's preset (stellar.expert; the devnet's explorer on `local`)",
  },
  FAREBOX_DEVNET_URL: {
    meaning: 'The devnet the `local` network runs on (its RPC, Horizon, friendbot and escrow emulation live under it).',
    kind: textSetting('an http(s) URL'),
    default: "`http://127.0.0.1:8787/devnet` (the gateway's embedded devnet)",
  },
  FAREBOX_DEVNET_PASSPHRASE: {
    meaning:
      "The devnet's passphrase on the `local` network: `local`, `testnet` (the devnet stands in for Stellar testnet, so x402 `exact` works with stock clients; `npm start` sets it) or a literal passphrase, never the mainnet one (docs/devnet.md).",
    kind: textSetting("`local`, `testnet` or a passphrase other than mainnet's"),
    default: '`local`',
  },
  FAREBOX_DATA_DIR: {
    meaning: 'The data folder: the embedded PGlite database, the keystore, the catalog cursor, the devnet state, the discovery snapshots.',
    kind: textSetting('a folder'),
    default: '`./.farebox`',
  },
  FAREBOX_MODEL_DIR: {
    meaning:
      "A local copy of the search embedding model (`farebox model fetch` writes one). Without a model search is keyword-only, and `/health`, each search hit's `search_mode` and the dashboard say so.",
    kind: textSetting('a folder'),
    default: '`~/.cache/farebox/models`',
  },
  FAREBOX_ALLOW_MODEL_DOWNLOAD: {
    meaning:
      '`true` fetches `Xenova/multilingual-e5-small` from the model hub in the background when the model folder has no copy: search is keyword-only until it is ready, then hybrid without a restart (docs/production.md says why production keeps it off). `npm start` and `farebox dev` set it.',
    kind: onWhenTrueSetting(),
    default: '`false`',
  },
  FAREBOX_MODEL_HUB_URL: {
    meaning: 'Where the model is downloaded from (a mirror in the Hugging Face layout); also read by `farebox model fetch`.',
    kind: urlSetting(),
    default: '`https://huggingface.co/`',
  },
});
