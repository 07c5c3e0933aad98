import { defineSettings, SHARED_SETTINGS, textSetting } from '@farebox/protocol';

/**
 * The variables `createProvider` falls back on when an option is not given
 * (precedence: option, then variable, then the network preset), declared
 * once for docs/configuration.md. `resolveConfig` (config.ts) and
 * `resolveExact` (exact-config.ts) read and check them, every problem named
 * at once; tests/configuration.test.ts checks that the provider reads no
 * variable missing here. `prepareLocalEnv` (local-env.ts) fills in the local
 * ones from a running gateway.
 */
const url = textSetting('an http(s) URL');
export const PROVIDER_SETTINGS = defineSettings({
  PUBLIC_ENDPOINT: {
    meaning: "The service's public URL, stored on-chain (option `endpoint`); its path is the paid route. https except on `local` or loopback.",
    kind: url,
    default: 'unset (on `local`, the address `listen()` gets)',
  },
  STELLAR_NETWORK: { ...SHARED_SETTINGS.STELLAR_NETWORK, meaning: 'The network the service is paid on (option `network`).' },
  STELLAR_CONTRACT_ID: {
    ...SHARED_SETTINGS.STELLAR_CONTRACT_ID,
    meaning: 'The service registry contract (option `contractId`).',
    default: "the devnet's on `local`, none on `testnet`/`mainnet`",
  },
  STELLAR_RPC_URL: { ...SHARED_SETTINGS.STELLAR_RPC_URL, meaning: 'The Soroban RPC server (option `rpcUrl`).' },
  STELLAR_HORIZON_URL: { ...SHARED_SETTINGS.STELLAR_HORIZON_URL, meaning: 'The Horizon server: account, trustline, friendbot funding (option `horizonUrl`).' },
  STELLAR_USDC_ISSUER: { ...SHARED_SETTINGS.STELLAR_USDC_ISSUER, meaning: 'The USDC issuer named in quotes (option `usdcIssuer`).' },
  FAREBOX_DEVNET_URL: { ...SHARED_SETTINGS.FAREBOX_DEVNET_URL, meaning: 'The devnet on the `local` network (option `devnetUrl`).' },
  FAREBOX_DEVNET_PASSPHRASE: {
    ...SHARED_SETTINGS.FAREBOX_DEVNET_PASSPHRASE,
    meaning:
      "The devnet's passphrase on the `local` network (option `devnetPassphrase`): `testnet` makes the devnet stand in for testnet, so `exact` is offered.",
  },
  FAREBOX_PLATFORM_PUBLIC_KEY: {
    meaning: "The gateway's key (option `platform.publicKey`): the calls it signs are accepted.",
    kind: textSetting('a `G...` public key'),
    default: 'unset (`prepareLocalEnv` asks the local gateway)',
  },
  FAREBOX_URL: {
    meaning:
      'The gateway (option `platform.url`): its facilitator `<url>/x402` settles `exact` payments by default; `prepareLocalEnv` reads the local settings from it.',
    kind: url,
    default: 'unset (`prepareLocalEnv`: `http://127.0.0.1:8787`)',
  },
  FAREBOX_FACILITATOR_URL: {
    meaning: 'Another x402 facilitator (option `exact.facilitatorUrl`; `POST <url>/verify`, `/settle`); needs `FAREBOX_EXACT_PAY_TO`.',
    kind: url,
    default: "unset: the gateway's",
  },
  FAREBOX_EXACT_PAY_TO: {
    meaning: "The receiver of `exact` payments with another facilitator (option `exact.payTo`); the platform's facilitator names the treasury.",
    kind: textSetting('a `G...` or `C...` address'),
    default: 'unset',
  },
  TRUSTLESS_WORK_API_KEY: { meaning: 'Turns escrow payments on (option `trustlessWork.apiKey`).', kind: textSetting(), default: 'unset', secret: true },
  TRUSTLESS_WORK_PLATFORM_ADDRESS: {
    meaning: "The platform's address in escrows (option `trustlessWork.platformAddress`); required when escrow is on.",
    kind: textSetting('a `G...` public key'),
    default: 'unset (`prepareLocalEnv` asks the local gateway)',
  },
  TRUSTLESS_WORK_API_URL: {
    meaning: "The escrow provider's API (option `trustlessWork.baseUrl`).",
    kind: url,
    default: "Trustless Work's for the network (the devnet's emulation on `local`)",
  },
  FAREBOX_DISCOVERY_URL: { meaning: 'A discovery backend the service is announced to (option `discoveryUrl`).', kind: url, default: 'unset' },
  BACKEND_URL: { meaning: 'The older name of `FAREBOX_DISCOVERY_URL`, read when it is unset.', kind: url, deprecated: '`FAREBOX_DISCOVERY_URL`' },
  AGENT_WALLET_SECRET: {
    meaning: "The owner's key (option `wallet.secret`): payouts go there, and `bootstrap()` signs with it.",
    kind: textSetting('an `S...` secret'),
    default: 'unset',
    secret: true,
  },
  KEYPAIR_PATH: {
    meaning:
      'A file holding the owner\'s key (option `wallet.keypairPath`), read when `AGENT_WALLET_SECRET` is unset: the `S...` seed or JSON `{ "secret": "S..." }`.',
    kind: textSetting('a file path'),
    default: 'unset (`prepareLocalEnv`: `.farebox/keypair`, created on first run)',
  },
});
