import { defineSettings, SHARED_SETTINGS, textSetting } from '@farebox/protocol';

const S = SHARED_SETTINGS;

/**
 * The variables `@farebox/client` falls back on when an option is not given
 * (`createClient`'s `env` option, default `process.env`; packages/client
 * README), declared once for docs/configuration.md. direct.ts and
 * discovery.ts read them; tests/configuration.test.ts checks that the client
 * reads no variable missing here. The network ones are read by
 * `resolveNetwork` (`@farebox/stellar`) with the same environment.
 */
export const CLIENT_SETTINGS = defineSettings({
  FAREBOX_URL: {
    meaning: "A gateway for `createClient`'s direct calls (option `gatewayUrl`): its facilitator settles `exact` payments, its platform key is trusted.",
    kind: textSetting('an http(s) URL'),
    default: 'unset',
  },
  TRUSTLESS_WORK_API_KEY: {
    meaning: "The escrow provider's key for direct escrow payments (option `escrow.apiKey`).",
    kind: textSetting(),
    default: 'unset',
    secret: true,
  },
  TRUSTLESS_WORK_PLATFORM_ADDRESS: {
    meaning: "The platform's address in the escrows a direct call funds (option `platformAddress`).",
    kind: textSetting('a `G...` public key'),
    default: "unset (read from the gateway's `/v1/platform/key` with `FAREBOX_URL`)",
  },
  FAREBOX_DISCOVERY_URL: { meaning: "`createDiscoveryClient`'s backend (option `url`).", kind: textSetting('an http(s) URL'), default: 'unset' },
  BACKEND_URL: {
    meaning: 'The older name of `FAREBOX_DISCOVERY_URL`, read when it is unset.',
    kind: textSetting('an http(s) URL'),
    deprecated: '`FAREBOX_DISCOVERY_URL`',
  },
  STELLAR_NETWORK: { ...S.STELLAR_NETWORK, meaning: "`createClient`'s network (option `network`)." },
  FAREBOX_DEVNET_URL: { ...S.FAREBOX_DEVNET_URL, meaning: 'The devnet on the `local` network (option `devnetUrl`).' },
  STELLAR_RPC_URL: S.STELLAR_RPC_URL,
  STELLAR_HORIZON_URL: S.STELLAR_HORIZON_URL,
  STELLAR_FRIENDBOT_URL: S.STELLAR_FRIENDBOT_URL,
  STELLAR_CONTRACT_ID: S.STELLAR_CONTRACT_ID,
  STELLAR_USDC_ISSUER: S.STELLAR_USDC_ISSUER,
  STELLAR_NETWORK_PASSPHRASE: S.STELLAR_NETWORK_PASSPHRASE,
  STELLAR_EXPLORER_URL: S.STELLAR_EXPLORER_URL,
  FAREBOX_DEVNET_PASSPHRASE: S.FAREBOX_DEVNET_PASSPHRASE,
});
