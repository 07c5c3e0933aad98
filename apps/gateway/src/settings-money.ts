import { defineSettings, flagSetting, textSetting } from '@farebox/protocol';

/**
 * The gateway's settlement, operator and x402 facilitator variables (part of
 * `GATEWAY_SETTINGS`, settings.ts). Their values are checked by the parts of
 * `@farebox/gateway-core` that use them (settlement/config.ts,
 * operator/config, x402/config.ts), against the network, every problem named
 * with the others.
 */
const duration = (most?: string) => textSetting(`a duration: \`500ms\`, \`10s\`, \`5m\`, \`1h\` (a bare number is seconds)${most ? `, at most ${most}` : ''}`);
const stroops = (values = 'a whole number of stroops >= 1') => textSetting(values);

export const MONEY_SETTINGS = defineSettings({
  FAREBOX_SETTLEMENT_INTERVAL: {
    meaning: 'The settlement cycle: a cycle older than this is released by the next tick (docs/settlement.md).',
    kind: duration(),
    default: '`1h`',
  },
  FAREBOX_FUNDING_INTERVAL: {
    meaning: 'The settlement tick: claims new earnings, funds one batch per publisher, closes cycles past the interval, resumes interrupted ones.',
    kind: duration(),
    default: '`10s`',
  },
  TRUSTLESS_WORK_URL: {
    meaning: "The escrow provider (Trustless Work, or the devnet's emulation).",
    kind: textSetting('an http(s) URL'),
    default: "the devnet's `/escrow` on `local`, `https://dev.api.trustlesswork.com` on `testnet`, `https://api.trustlesswork.com` on `mainnet`",
  },
  TRUSTLESS_WORK_API_KEY: {
    meaning:
      "The escrow provider's API key. Without one off the `local` network, settlement and the wallet path are off (`POST /v1/publisher/settle` answers 503).",
    kind: textSetting(),
    default: 'any key on the devnet',
    secret: true,
  },
  FAREBOX_ESCROW_BUDGET: {
    meaning: 'The request budget the gateway keeps toward the escrow provider (its limit is 50 per 60 s).',
    kind: textSetting('`requests/windowMs`, e.g. `50/60000`'),
    default: '`50/60000`',
  },
  FAREBOX_TREASURY_AUTOFUND: {
    meaning:
      'Devnet convenience: when the treasury lacks USDC for a batch, the devnet friendbot gives it 100,000 USDC. On testnet and mainnet the operator funds the treasury (`FAREBOX_TREASURY_SECRET` imports its key).',
    kind: flagSetting(),
    default: '`true` on `local`, else `false`',
  },
  FAREBOX_OPERATORS: {
    meaning: 'The accounts with the operator role: treasury, disputes, settlement retries, the audit log (docs/operator.md).',
    kind: textSetting('comma-separated account ids (`acct_…`)'),
    default: 'unset',
  },
  FAREBOX_DISPUTE_AUTO_REFUND_MINUTES: {
    meaning: 'Escrows never served and older than this many minutes are refunded in full (docs/operator.md).',
    kind: textSetting('a whole number of minutes (`0`: at once), or `off`'),
    default: '`30`',
  },
  FAREBOX_DISPUTE_INTERVAL: {
    meaning: 'How often open disputes are retried and the refund policy applied.',
    kind: duration(),
    default: '`60s`',
  },
  FAREBOX_X402_FACILITATOR: {
    meaning:
      'Serve x402 verify and settle (`/x402/*`). On mainnet the operator turns it on; the bounds below hold either way. It serves only where the network is `stellar:testnet` or `stellar:pubnet` (a local devnet under its own passphrase is `stellar:local`: `supported` lists nothing, verify and settle answer 503).',
    kind: flagSetting(),
    default: '`true` on `local` and `testnet`, `false` on `mainnet`',
  },
  FAREBOX_X402_FEE_ACCOUNT_SECRET: {
    meaning:
      'A dedicated account that pays the fees through fee-bump transactions; a channel account still signs the inner transaction. Keep only XLM there, as much as you accept to spend: it is the most the fees can ever cost. Must be neither the treasury nor a channel account.',
    kind: textSetting('an `S...` secret'),
    default: 'unset: the channel accounts pay',
    secret: true,
  },
  FAREBOX_X402_MAX_FEE_STROOPS: {
    meaning:
      "The most one settlement's fee may be: a payload offering more is refused (`invalid_exact_stellar_payload_fee_exceeds_maximum`). With a fee account, a fee bump pays up to twice this plus the resource fee.",
    kind: stroops(),
    default: '`50000` (0.005 XLM)',
  },
  FAREBOX_X402_PAYER_DAILY_FEE_STROOPS: {
    meaning: "Fees sponsored per payer (the transfer's `from`) per UTC day.",
    kind: stroops(),
    default: '`1000000` (0.1 XLM: 20 settles at the maximum fee)',
  },
  FAREBOX_X402_DAILY_FEE_STROOPS: {
    meaning:
      'Fees sponsored for all payers together per UTC day: the most the fee account (or the channels) can spend in a day on settles that succeed or are in flight.',
    kind: stroops(),
    default: '`100000000` (10 XLM)',
  },
  FAREBOX_X402_NEW_PAYER_DAILY_FEE_STROOPS: {
    meaning:
      'The part of the daily total that payers with no settled payment yet may hold at once, and that settles failed on chain spend for good: throwaway payers can use this part up, never the rest.',
    kind: stroops('a whole number of stroops, below the daily total'),
    default: 'a tenth of the daily total, at most `10000000` (1 XLM)',
  },
  FAREBOX_X402_SERVICE_NEW_PAYER_DAILY_FEE_STROOPS: {
    meaning: 'The same per service: an attack through one service stops newcomers there only.',
    kind: stroops("a whole number of stroops, below the newcomers' total"),
    default: "a tenth of the newcomers' total, at most `1000000` (0.1 XLM)",
  },
  FAREBOX_X402_IP_RATE_LIMIT: {
    meaning: "Verify and settle requests per minute and client IP (a provider's server makes two per paid call).",
    kind: textSetting('an integer >= 1'),
    default: '`600`',
  },
  FAREBOX_X402_PAYER_RATE_LIMIT: { meaning: 'Verify and settle requests per minute and payer.', kind: textSetting('an integer >= 1'), default: '`60`' },
  FAREBOX_X402_CHANNELS: {
    meaning:
      'Channel accounts settlements are sent from (keystore keys `platform:x402-channel:<i>`, shared by the gateways on one database): the most settlements in flight at once (docs/settlement.md).',
    kind: textSetting('an integer from 1 to 64'),
    default: '`8`',
  },
  FAREBOX_X402_CHANNEL_STROOPS: {
    meaning: 'XLM the treasury gives a channel account it creates (where there is no friendbot), and tops it up to when it falls below half.',
    kind: stroops('a whole number of stroops, at least 15000000 (1.5 XLM)'),
    default: '`20000000` (2 XLM)',
  },
  FAREBOX_X402_PAYER_CONCURRENCY: {
    meaning: 'Settlements of one payer in flight at once; more wait for their turn, payers served in turn.',
    kind: textSetting('an integer from 1 to 64'),
    default: '`2`',
  },
  FAREBOX_X402_REFUND_WINDOW: {
    meaning:
      "How long after its settlement an `exact` payment may be refunded (`POST /x402/refund`), and how long a settle-first payment's earning is held back from settlement batches (docs/settlement.md).",
    kind: duration('`24h`'),
    default: '`10m`',
  },
  FAREBOX_MPP_SECRET: {
    meaning:
      "The HMAC secret of MPP challenges (`Payment` scheme), the same on every gateway of a deployment. On testnet and mainnet channel sessions are on only with it and FAREBOX_MPP_CHANNEL_WASM_HASHES; on the local network a random one per process (docs/protocol.md, 'MPP channel sessions').",
    kind: textSetting('at least 32 bytes'),
    default: 'none (local: random)',
    secret: true,
  },
  FAREBOX_MPP_CHANNEL_WASM_HASHES: {
    meaning:
      'The code hashes (hex, comma separated) of the one-way channel contract (stellar-experimental/one-way-channel) whose channels are accepted: a channel running other code could take vouchers and never pay the treasury.',
    kind: textSetting('32-byte hex hashes, comma separated'),
    default: 'none (local: the devnet channel)',
  },
  FAREBOX_MPP_MIN_REFUND_WAITING_PERIOD: {
    meaning: "The fewest ledgers between a funder's close_start and its refund a channel must have: the watcher's time to close it first.",
    kind: textSetting('a whole number of ledgers >= 1'),
    default: '`120` (local: `10`)',
  },
  FAREBOX_MPP_IDLE_CLOSE: {
    meaning: 'A channel with no paid call for this long is closed by the treasury (what was paid withdrawn, the rest back to its funder).',
    kind: duration(),
    default: '`1h`',
  },
  FAREBOX_MPP_SETTLE_MIN: {
    meaning: 'An open channel is settled (kept open) once this much USDC is paid and not withdrawn.',
    kind: textSetting('a decimal USDC amount'),
    default: '`1`',
  },
});
