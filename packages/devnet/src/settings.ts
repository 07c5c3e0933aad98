import { defineSettings, SHARED_SETTINGS } from '@farebox/protocol';

/**
 * The variable the `farebox-devnet` bin reads (cli.ts; its other settings are
 * flags), declared once for docs/configuration.md.
 */
export const DEVNET_SETTINGS = defineSettings({
  FAREBOX_DEVNET_PASSPHRASE: {
    ...SHARED_SETTINGS.FAREBOX_DEVNET_PASSPHRASE,
    meaning:
      "The devnet's passphrase, unless `--passphrase` gives one: `local`, `testnet` (the devnet stands in for Stellar testnet) or a literal one, never mainnet's (docs/devnet.md).",
  },
});
