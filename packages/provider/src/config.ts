import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  ConfigError,
  ContractIdSchema,
  LIMITS,
  MIN_PRICE_BASE_UNITS,
  PublicKeySchema,
  ServiceNameSchema,
  firstIssueMessage,
  formatAmount,
  isValidStrKey,
  parseAmount,
  parsePrice,
  type X402Network,
} from '@farebox/protocol';
import { resolveNetwork, type NetworkConfig, type RegistryClient } from '@farebox/stellar';
import { parseBodyLimit } from './body-limit.js';
import { checkUrl, isLoopback, label, nonEmpty, pick, type ProviderEnv } from './config-util.js';
import { resolveDiscovery, resolveExact, type DiscoveryOptions, type ExactOptions, type ResolvedExact } from './exact-config.js';
import { publicKeyFromSecret, readKeypairFile } from './keys.js';
import type { EscrowVerifier, RegistryReader } from './ports.js';
import type { ReplayStore } from './replay.js';

/** Settlement networks a provider can run on. */
export type ProviderNetwork = 'testnet' | 'mainnet' | 'local';

/** A price in USDC: a number (`0.01`) or a decimal string (`'0.01'`). */
export type Price = number | string;

export type { ProviderEnv } from './config-util.js';
export type { DiscoveryOptions, ExactOptions, ExactSettle, ResolvedExact } from './exact-config.js';

/**
 * Options of {@link createProvider}. Precedence for every setting: this
 * option, then its environment variable, then the network preset.
 */
export interface ProviderOptions {
  /** Unique registry name of the service, at most 32 characters. */
  service: string;
  /**
   * USDC per call, a decimal string (`'0.002'`); also the floor when `priceFn` is used. A whole number of 20 or
   * more (`20000`: base units?) and a price over `maxPricePerCall` are refused.
   */
  pricePerCall: Price;
  /** The highest `pricePerCall` accepted, USDC; default 100 (a price above it is refused as a likely unit mistake). */
  maxPricePerCall?: Price;
  /** Price of one payload in USDC, raised to `pricePerCall` if lower. Must be deterministic in the payload. */
  priceFn?: (payload: unknown) => Price | Promise<Price>;
  /** Text shown to callers next to the price. */
  pricingNote?: string;
  /** What the service expects and returns. */
  description?: string;
  /** Stable public URL, stored on-chain at registration. Env: `PUBLIC_ENDPOINT`. */
  endpoint?: string;
  /** Env: `STELLAR_NETWORK`; default `testnet`. */
  network?: ProviderNetwork;
  /** Registry contract id (`C...`). Env: `STELLAR_CONTRACT_ID`. */
  contractId?: string;
  /** Soroban RPC URL. Env: `STELLAR_RPC_URL`. */
  rpcUrl?: string;
  /** Horizon URL (friendbot funding, trustline). Env: `STELLAR_HORIZON_URL`. */
  horizonUrl?: string;
  /** The local devnet's base URL (network `local`). Env: `FAREBOX_DEVNET_URL`; default the gateway's embedded devnet, `http://127.0.0.1:8787/devnet`. */
  devnetUrl?: string;
  /** USDC issuer (`G...`) named in quotes. Env: `STELLAR_USDC_ISSUER`; preset on every network. */
  usdcIssuer?: string;
  /**
   * The platform: `publicKey`, whose signed calls are accepted (env `FAREBOX_PLATFORM_PUBLIC_KEY`),
   * and `url`, the gateway whose facilitator (`<url>/x402`) settles `exact` payments by default (env `FAREBOX_URL`).
   */
  platform?: { publicKey?: string; url?: string };
  /** The standard x402 `exact` payment (see {@link ExactOptions}); `false` turns it off. */
  exact?: ExactOptions | false;
  /** Input and output description for x402 catalogs (the `bazaar` extension of the 402 and `/manifest`). */
  discovery?: DiscoveryOptions;
  /** The local devnet's passphrase (`local`, `testnet` or a literal one; network `local` only). Env: `FAREBOX_DEVNET_PASSPHRASE`. */
  devnetPassphrase?: string;
  /** Escrow provider. Env: `TRUSTLESS_WORK_API_KEY`, `TRUSTLESS_WORK_PLATFORM_ADDRESS`. */
  /**
   * The escrow provider. `budget`: how many requests the provider's escrow client sends per window (default 50 a
   * minute, the hosted API's limit; a devnet's escrow API without its rate limit takes more).
   */
  trustlessWork?: { apiKey?: string; platformAddress?: string; baseUrl?: string; budget?: { requests: number; windowMs: number } };
  /**
   * Where the default escrow verifier records served escrows (a durable JSON
   * file). Default `served-escrows.json` next to the keypair file, else
   * `.farebox/served-escrows.json`.
   */
  servedStorePath?: string;
  /** Discovery backend. Env: `FAREBOX_DISCOVERY_URL`, then `BACKEND_URL`. */
  discoveryUrl?: string;
  /** The owner's key. Env: `AGENT_WALLET_SECRET`, then `KEYPAIR_PATH`. */
  wallet?: { secret?: string; keypairPath?: string };
  /** The owner's public key, when the secret is kept elsewhere (e.g. registered from the dashboard). */
  ownerWallet?: string;
  /** Request body limit: `'256kb'` (default), `'1mb'`, or bytes. */
  bodyLimit?: string | number;
  /** Unpaid quotes per minute and IP; default 60. Platform-signed calls never count. */
  rateLimitPerMinute?: number;
  /** Serve without a registry `contractId`. Local demos only. */
  allowUnverified?: boolean;
  /** Where warnings go (a configuration that starts but can accept no payment yet). Default `console.warn`. */
  onWarning?: (message: string) => void;
  /** Where certificate nonces are remembered; default an {@link InMemoryReplayStore}. */
  replayStore?: ReplayStore;
  /**
   * Registry access used to confirm this service's registration and owner.
   * Default: `createRegistryClient` of `@farebox/stellar` on this network when a
   * contractId resolves. A `RegistryClient` (with `register`/`update`) also serves bootstrap().
   */
  registry?: RegistryReader | RegistryClient;
  /** Verifies and releases escrow payments; needed for the direct path. */
  escrowVerifier?: EscrowVerifier;
  /** Environment to read instead of `process.env`. */
  env?: ProviderEnv;
  /** Clock in milliseconds; default `Date.now`. */
  now?: () => number;
}

/** The configuration a provider runs with, after precedence and validation. Holds no secret. */
export interface ResolvedProviderConfig {
  service: string;
  /** Floor price, base units. */
  pricePerCall: bigint;
  dynamicPricing: boolean;
  pricingNote?: string;
  description: string;
  /** The public URL, when configured (listen() fills in its own address otherwise). */
  endpoint?: string;
  /** Path of the paid route: the endpoint URL's path, `/` by default. */
  endpointPath: string;
  network: ProviderNetwork;
  x402Network: X402Network;
  /** Asset named in quotes: `USDC:<issuer>`. */
  asset: string;
  contractId?: string;
  /** Soroban RPC URL (the devnet's on `local`). */
  rpcUrl: string;
  /** Horizon URL (the devnet's on `local`). */
  horizonUrl: string;
  /** Friendbot URL on local and testnet; none on mainnet. */
  friendbotUrl?: string;
  platformPublicKey?: string;
  /** The platform's gateway URL (`platform.url`, `FAREBOX_URL`). */
  platformUrl?: string;
  /** The `exact` payment, when offered. */
  exact?: ResolvedExact;
  /** The x402 `bazaar` discovery extension, when `discovery` is configured. */
  bazaar?: Record<string, unknown>;
  escrow: { enabled: boolean; platformAddress?: string; baseUrl?: string; servedStorePath?: string; budget?: { requests: number; windowMs: number } };
  discoveryUrl?: string;
  ownerWallet: string;
  /** Whether a wallet secret is available (needed to register on-chain). */
  hasWalletSecret: boolean;
  /** Bytes. */
  bodyLimit: number;
  rateLimitPerMinute: number;
  allowUnverified: boolean;
  /** Problems that do not stop the provider (today: it can accept no payment yet). */
  warnings: readonly string[];
}

/** Said at start, on /health and to paid requests when neither payment path is configured. */
export const NO_PAYMENT_MESSAGE =
  'no payment can be accepted yet: set platform.publicKey (FAREBOX_PLATFORM_PUBLIC_KEY) to accept platform-signed calls, or trustlessWork.apiKey (TRUSTLESS_WORK_API_KEY) to accept escrow payments, or platform.url (FAREBOX_URL) or exact.facilitatorUrl (FAREBOX_FACILITATOR_URL) on stellar:testnet or stellar:pubnet to accept exact payments; /manifest, registration and bootstrap() work meanwhile';

const NETWORKS: readonly ProviderNetwork[] = ['testnet', 'mainnet', 'local'];

/** The escrow provider's API per network: Trustless Work's, or the devnet's emulation on `local`. */
function defaultEscrowUrl(network: ProviderNetwork, stellar: NetworkConfig): string {
  if (network === 'local') return `${stellar.horizonUrl}/escrow`;
  return network === 'mainnet' ? 'https://api.trustlesswork.com' : 'https://dev.api.trustlesswork.com';
}

/**
 * Resolves and validates every option at once. Throws a `ConfigError`
 * listing every problem found. Returns the public config and the wallet
 * secret (kept out of the config object).
 */
export function resolveConfig(options: ProviderOptions): {
  config: ResolvedProviderConfig;
  stellar: NetworkConfig;
  walletSecret?: string;
  escrowApiKey?: string;
} {
  if (typeof options !== 'object' || options === null) throw new ConfigError(['options must be an object']);
  const problems: string[] = [];
  const env: ProviderEnv = options.env ?? process.env;

  const service = typeof options.service === 'string' ? options.service : '';
  const serviceCheck = ServiceNameSchema.safeParse(service);
  if (!serviceCheck.success) problems.push(`service: ${firstIssueMessage(serviceCheck.error)}`);

  let pricePerCall = 0n;
  if (options.pricePerCall === undefined) {
    problems.push('pricePerCall required (USDC per call, e.g. 0.01)');
  } else {
    try {
      const max = options.maxPricePerCall === undefined ? undefined : parseAmount(options.maxPricePerCall);
      pricePerCall = parsePrice(options.pricePerCall, { field: 'pricePerCall', raise: "maxPricePerCall: '{}'", ...(max === undefined ? {} : { max }) });
      if (pricePerCall < MIN_PRICE_BASE_UNITS) {
        problems.push(
          `pricePerCall must be at least ${formatAmount(MIN_PRICE_BASE_UNITS, { trim: true })} USDC (${MIN_PRICE_BASE_UNITS} base units), so that the 5 % platform fee of a call is at least one base unit`,
        );
      }
    } catch (e) {
      problems.push((e as Error).message.startsWith('pricePerCall') ? (e as Error).message : `maxPricePerCall: ${(e as Error).message}`);
    }
  }
  if (options.priceFn !== undefined && typeof options.priceFn !== 'function') problems.push('priceFn must be a function of the payload');

  const pricingNote = options.pricingNote;
  if (pricingNote !== undefined && (typeof pricingNote !== 'string' || pricingNote.length > LIMITS.pricingNote)) {
    problems.push(`pricingNote must be a string of at most ${LIMITS.pricingNote} characters`);
  }
  const description = options.description ?? '';
  if (typeof description !== 'string' || description.length > LIMITS.description) {
    problems.push(`description must be a string of at most ${LIMITS.description} characters`);
  }

  const networkPick = pick(options.network, env, 'STELLAR_NETWORK');
  let network: ProviderNetwork = 'testnet';
  if (networkPick.value !== undefined) {
    if ((NETWORKS as readonly string[]).includes(networkPick.value)) network = networkPick.value as ProviderNetwork;
    else problems.push(`${label('network', networkPick.from)} must be testnet, mainnet or local (got ${JSON.stringify(networkPick.value)})`);
  }

  const endpointPick = pick(options.endpoint, env, 'PUBLIC_ENDPOINT');
  let endpointPath = '/';
  if (endpointPick.value !== undefined) {
    const name = label('endpoint', endpointPick.from);
    if (endpointPick.value.length > LIMITS.endpoint) problems.push(`${name} too long (max ${LIMITS.endpoint})`);
    const url = checkUrl(endpointPick.value, name, problems);
    if (url) {
      endpointPath = url.pathname.length > 1 ? url.pathname.replace(/\/+$/, '') : '/';
      if (url.protocol !== 'https:' && network !== 'local' && !isLoopback(url.hostname)) {
        problems.push(`${name} must use https on ${network} (callers pay before they reach it)`);
      }
    }
  }

  // The chain side (presets, devnet URL) is @farebox/stellar's: only valid values are passed on.
  const chainOptions: Parameters<typeof resolveNetwork>[0] = { network, env: {} };
  const contractPick = pick(options.contractId, env, 'STELLAR_CONTRACT_ID');
  if (contractPick.value !== undefined) {
    if (ContractIdSchema.safeParse(contractPick.value).success) chainOptions.contractId = contractPick.value;
    else problems.push(`${label('contractId', contractPick.from)} is not a valid C... contract id`);
  }
  for (const [key, option, envName] of [
    ['rpcUrl', options.rpcUrl, 'STELLAR_RPC_URL'],
    ['horizonUrl', options.horizonUrl, 'STELLAR_HORIZON_URL'],
    ['devnetUrl', options.devnetUrl, 'FAREBOX_DEVNET_URL'],
  ] as const) {
    const picked = pick(option, env, envName);
    if (picked.value !== undefined && checkUrl(picked.value, label(key, picked.from), problems)) chainOptions[key] = picked.value;
  }
  const passphrasePick = pick(options.devnetPassphrase, env, 'FAREBOX_DEVNET_PASSPHRASE');
  if (passphrasePick.value !== undefined) chainOptions.devnetPassphrase = passphrasePick.value;
  const issuerPick = pick(options.usdcIssuer, env, 'STELLAR_USDC_ISSUER');
  if (issuerPick.value !== undefined) {
    if (isValidStrKey('publicKey', issuerPick.value)) chainOptions.usdcIssuer = issuerPick.value;
    else problems.push(`${label('usdcIssuer', issuerPick.from)} is not a valid G... public key`);
  }
  let stellar: NetworkConfig | undefined;
  try {
    stellar = resolveNetwork(chainOptions);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    problems.push(...e.problems);
  }

  const platformPick = pick(options.platform?.publicKey, env, 'FAREBOX_PLATFORM_PUBLIC_KEY');
  if (platformPick.value !== undefined && !PublicKeySchema.safeParse(platformPick.value).success) {
    problems.push(`${label('platform.publicKey', platformPick.from)} is not a valid G... public key`);
  }

  const apiKeyPick = pick(options.trustlessWork?.apiKey, env, 'TRUSTLESS_WORK_API_KEY');
  const platformAddressPick = pick(options.trustlessWork?.platformAddress, env, 'TRUSTLESS_WORK_PLATFORM_ADDRESS');
  const escrowEnabled = apiKeyPick.value !== undefined;
  if (escrowEnabled && platformAddressPick.value === undefined) {
    problems.push('trustlessWork.platformAddress (TRUSTLESS_WORK_PLATFORM_ADDRESS) is required when escrow is active (an escrow API key is set)');
  }
  if (platformAddressPick.value !== undefined && !isValidStrKey('publicKey', platformAddressPick.value)) {
    problems.push(`${label('trustlessWork.platformAddress', platformAddressPick.from)} is not a valid G... public key`);
  }
  const escrowUrlPick = pick(options.trustlessWork?.baseUrl, env, 'TRUSTLESS_WORK_API_URL');
  if (escrowUrlPick.value !== undefined) checkUrl(escrowUrlPick.value, label('trustlessWork.baseUrl', escrowUrlPick.from), problems);
  if (options.servedStorePath !== undefined && (typeof options.servedStorePath !== 'string' || options.servedStorePath.trim() === '')) {
    problems.push('servedStorePath must be a file path');
  }

  const discoveryPick = pick(options.discoveryUrl, env, 'FAREBOX_DISCOVERY_URL', 'BACKEND_URL');
  if (discoveryPick.value !== undefined) checkUrl(discoveryPick.value, label('discoveryUrl', discoveryPick.from), problems);

  // Wallet: option secret, option keypair file, then AGENT_WALLET_SECRET, then KEYPAIR_PATH.
  let walletSecret: string | undefined;
  let walletFrom: string | undefined;
  const secretOption = nonEmpty(options.wallet?.secret);
  const pathOption = nonEmpty(options.wallet?.keypairPath);
  const readPath = (path: string, from: string) => {
    if (!existsSync(path)) {
      problems.push(`${from} file ${path} does not exist (create one with ensureKeypairFile(), or set AGENT_WALLET_SECRET)`);
      return;
    }
    try {
      walletSecret = readKeypairFile(path);
      walletFrom = from;
    } catch (e) {
      problems.push((e as Error).message);
    }
  };
  const keypairFile = secretOption ? undefined : (pathOption ?? (nonEmpty(env.AGENT_WALLET_SECRET) ? undefined : nonEmpty(env.KEYPAIR_PATH)));
  if (secretOption) [walletSecret, walletFrom] = [secretOption, 'wallet.secret'];
  else if (pathOption) readPath(pathOption, 'wallet.keypairPath');
  else if (nonEmpty(env.AGENT_WALLET_SECRET)) [walletSecret, walletFrom] = [nonEmpty(env.AGENT_WALLET_SECRET), 'AGENT_WALLET_SECRET'];
  else if (nonEmpty(env.KEYPAIR_PATH)) readPath(nonEmpty(env.KEYPAIR_PATH)!, 'KEYPAIR_PATH');

  let ownerWallet = '';
  if (walletSecret !== undefined) {
    try {
      ownerWallet = publicKeyFromSecret(walletSecret);
    } catch {
      problems.push(`${walletFrom} is not a valid S... secret seed`);
    }
  }
  const ownerOption = nonEmpty(options.ownerWallet);
  if (ownerOption !== undefined) {
    if (!isValidStrKey('publicKey', ownerOption)) problems.push('ownerWallet is not a valid G... public key');
    else if (ownerWallet && ownerWallet !== ownerOption)
      problems.push(`ownerWallet ${ownerOption} does not match the wallet secret's public key ${ownerWallet}`);
    else ownerWallet = ownerOption;
  }
  if (
    !ownerWallet &&
    walletSecret === undefined &&
    ownerOption === undefined &&
    !problems.some((p) => p.includes('KEYPAIR_PATH') || p.includes('keypairPath'))
  ) {
    problems.push('wallet required: set wallet.secret (AGENT_WALLET_SECRET), wallet.keypairPath (KEYPAIR_PATH) or ownerWallet; payouts go to this account');
  }

  let bodyLimit = 256 * 1024;
  if (options.bodyLimit !== undefined) {
    const parsed = parseBodyLimit(options.bodyLimit);
    if (parsed === null) problems.push(`bodyLimit must be a size such as '256kb' or '1mb' (1 byte to 64mb), got ${JSON.stringify(options.bodyLimit)}`);
    else bodyLimit = parsed;
  }

  const rateLimitPerMinute = options.rateLimitPerMinute ?? 60;
  if (!Number.isSafeInteger(rateLimitPerMinute) || rateLimitPerMinute < 1) problems.push('rateLimitPerMinute must be a positive integer');

  if (options.allowUnverified !== undefined && typeof options.allowUnverified !== 'boolean') problems.push('allowUnverified must be a boolean');
  if (options.replayStore !== undefined && typeof options.replayStore?.checkAndRemember !== 'function') {
    problems.push('replayStore must implement checkAndRemember(nonce, keepUntilUnixSeconds)');
  }
  if (options.registry !== undefined && typeof options.registry?.getAgent !== 'function') problems.push('registry must implement getAgent(service)');
  if (options.escrowVerifier !== undefined && typeof options.escrowVerifier?.claim !== 'function') {
    problems.push('escrowVerifier must implement claim, release and abandon');
  }

  const platformUrlPick = pick(options.platform?.url, env, 'FAREBOX_URL');
  if (platformUrlPick.value !== undefined) checkUrl(platformUrlPick.value, label('platform.url', platformUrlPick.from), problems);
  const exact = resolveExact(
    options.exact,
    env,
    { x402Network: stellar?.x402Network, usdcContractId: stellar?.usdc.contractId, platformUrl: platformUrlPick.value, keypairFile },
    problems,
  );
  if (exact?.settle === 'before-handler' && exact.platform && !walletSecret) {
    problems.push(
      "exact.settle 'before-handler' needs the owner's secret (wallet.secret, AGENT_WALLET_SECRET, wallet.keypairPath or KEYPAIR_PATH): a payment settled before a handler that fails is refunded by a request the owner's key signs",
    );
  }
  const bazaar = resolveDiscovery(options.discovery, problems);
  const warnings: string[] = [];
  if (platformPick.value === undefined && !escrowEnabled && !exact) {
    // The spec: without an escrow API key the SDK starts with escrow disabled;
    // registration and discovery still work. Say loudly that nothing can be paid.
    warnings.push(NO_PAYMENT_MESSAGE);
  }

  if (problems.length > 0 || !stellar) throw new ConfigError(problems);
  const contractId = stellar.registryContractId;

  const config: ResolvedProviderConfig = {
    service,
    pricePerCall,
    dynamicPricing: options.priceFn !== undefined,
    ...(pricingNote !== undefined ? { pricingNote } : {}),
    description,
    ...(endpointPick.value !== undefined ? { endpoint: endpointPick.value } : {}),
    endpointPath,
    network,
    x402Network: stellar.x402Network,
    asset: `USDC:${stellar.usdc.issuer}`,
    ...(contractId !== undefined ? { contractId } : {}),
    rpcUrl: stellar.rpcUrl,
    horizonUrl: stellar.horizonUrl,
    ...(stellar.friendbotUrl !== undefined ? { friendbotUrl: stellar.friendbotUrl } : {}),
    ...(platformPick.value !== undefined ? { platformPublicKey: platformPick.value } : {}),
    ...(platformUrlPick.value !== undefined ? { platformUrl: platformUrlPick.value } : {}),
    ...(exact ? { exact } : {}),
    ...(bazaar ? { bazaar } : {}),
    escrow: {
      enabled: escrowEnabled,
      ...(platformAddressPick.value !== undefined ? { platformAddress: platformAddressPick.value } : {}),
      ...(escrowEnabled ? { baseUrl: escrowUrlPick.value ?? defaultEscrowUrl(network, stellar) } : {}),
      ...(options.trustlessWork?.budget ? { budget: options.trustlessWork.budget } : {}),
      ...(escrowEnabled
        ? { servedStorePath: nonEmpty(options.servedStorePath) ?? join(dirname(keypairFile ?? '.farebox/keypair'), 'served-escrows.json') }
        : {}),
    },
    ...(discoveryPick.value !== undefined ? { discoveryUrl: discoveryPick.value } : {}),
    ownerWallet,
    hasWalletSecret: walletSecret !== undefined,
    bodyLimit,
    rateLimitPerMinute,
    allowUnverified: options.allowUnverified === true,
    warnings,
  };
  return {
    config: Object.freeze(config),
    stellar,
    ...(walletSecret !== undefined ? { walletSecret } : {}),
    ...(apiKeyPick.value !== undefined ? { escrowApiKey: apiKeyPick.value } : {}),
  };
}
