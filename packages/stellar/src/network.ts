import { Asset, Keypair, StrKey, hash } from '@stellar/stellar-sdk';
import { ConfigError } from '@farebox/protocol';

export type NetworkName = 'local' | 'testnet' | 'mainnet';

/** Everything the Stellar adapters need to talk to one network. Plain data: several may coexist. */
export interface NetworkConfig {
  name: NetworkName;
  passphrase: string;
  rpcUrl: string;
  horizonUrl: string;
  friendbotUrl?: string;
  usdc: { code: 'USDC'; issuer: string; contractId: string };
  registryContractId?: string;
  x402Network: 'stellar:local' | 'stellar:testnet' | 'stellar:pubnet';
  explorer: { tx(hash: string): string; account(g: string): string; contract(c: string): string };
  allowHttp: boolean;
}

export interface ResolveNetworkOptions {
  network?: NetworkName;
  rpcUrl?: string;
  horizonUrl?: string;
  friendbotUrl?: string;
  contractId?: string;
  passphrase?: string;
  usdcIssuer?: string;
  explorerUrl?: string;
  devnetUrl?: string;
  /**
   * The local devnet's passphrase (`local` preset only; `STELLAR_NETWORK_PASSPHRASE`
   * or `passphrase` still win): `local` (default), `testnet` (the devnet stands in
   * for testnet, so `x402Network` is `stellar:testnet`) or a literal passphrase.
   * Environment: `FAREBOX_DEVNET_PASSPHRASE`.
   */
  devnetPassphrase?: string;
  /** Environment to read fallbacks from (the host passes its own; none when omitted). */
  env?: Record<string, string | undefined>;
}

export const LOCAL_PASSPHRASE = 'Standalone Network ; February 2017';
export const TESTNET_PASSPHRASE = 'Test SDF Network ; September 2015';
export const MAINNET_PASSPHRASE = 'Public Global Stellar Network ; September 2015';
export const DEFAULT_DEVNET_URL = 'http://127.0.0.1:8787/devnet';

// The devnet's fixed identities are derived from fixed labels so that every
// process (gateway, SDKs, tests) agrees on them without configuration.
const issuerKeypair = Keypair.fromRawEd25519Seed(hash(Buffer.from('farebox-devnet:usdc-issuer')));
/** The USDC issuer on the local devnet (deterministic). */
export const LOCAL_USDC_ISSUER: string = issuerKeypair.publicKey();
/** The devnet issuer's secret. Only the devnet uses it (to mint); it guards no real value. */
export const LOCAL_USDC_ISSUER_SECRET: string = issuerKeypair.secret();
/** The registry contract id on the local devnet (deterministic). */
export const LOCAL_REGISTRY_CONTRACT_ID: string = StrKey.encodeContract(hash(Buffer.from('farebox-devnet:registry-contract')));
/** The one-way payment channel factory on the local devnet (deterministic). */
export const LOCAL_CHANNEL_FACTORY_ID: string = StrKey.encodeContract(hash(Buffer.from('farebox-devnet:channel-factory')));
/** The code hash (hex) the devnet's channels report as their executable: what a gateway on the local network accepts. */
export const LOCAL_CHANNEL_WASM_HASH: string = hash(Buffer.from('farebox-devnet:wasm:One-way payment channel (stellar-experimental/one-way-channel)')).toString(
  'hex',
);

/**
 * The passphrase a devnet runs under: `local` (or nothing) is the devnet's own,
 * `testnet` the Stellar testnet's (so stock x402 clients for `stellar:testnet`
 * sign for it), anything else a literal passphrase. The mainnet passphrase is
 * refused: a devnet signature must never be valid on the public network.
 *
 * @example
 * devnetPassphrase('testnet'); // 'Test SDF Network ; September 2015'
 */
export function devnetPassphrase(value: string | undefined): string {
  const v = value?.trim() ?? '';
  if (v === '' || v === 'local') return LOCAL_PASSPHRASE;
  if (v === 'testnet') return TESTNET_PASSPHRASE;
  if (v === MAINNET_PASSPHRASE || v === 'mainnet' || v === 'pubnet')
    throw new ConfigError(['the devnet passphrase must not be the mainnet one (its signatures would be valid on the public network)']);
  return v;
}

/** Circle's USDC issuer on the Stellar testnet; also the devnet's under the testnet passphrase. */
export const TESTNET_USDC_ISSUER = 'GBBD47IF6LWK7P7MDEVSCWR7DPUWV3NY3DTQEVFL4NAT4AQH3ZLLFLA5';
const MAINNET_USDC_ISSUER = 'GA5ZSEJYB37JRC5AVCIA5MOP4RHTM335X2KGX3IHOJAPP5RE34K4KZVN';

interface Preset {
  passphrase: string;
  rpcUrl: string;
  horizonUrl: string;
  friendbotUrl?: string;
  usdcIssuer: string;
  registryContractId?: string;
  x402Network: NetworkConfig['x402Network'];
  explorerBase: string;
}

function preset(name: NetworkName, devnetUrl: string): Preset {
  switch (name) {
    case 'local':
      return {
        passphrase: LOCAL_PASSPHRASE,
        rpcUrl: `${devnetUrl}/soroban/rpc`,
        horizonUrl: devnetUrl,
        friendbotUrl: `${devnetUrl}/friendbot`,
        usdcIssuer: LOCAL_USDC_ISSUER,
        registryContractId: LOCAL_REGISTRY_CONTRACT_ID,
        x402Network: 'stellar:local',
        explorerBase: `${devnetUrl}/explorer/local`,
      };
    case 'testnet':
      return {
        passphrase: TESTNET_PASSPHRASE,
        rpcUrl: 'https://soroban-testnet.stellar.org',
        horizonUrl: 'https://horizon-testnet.stellar.org',
        friendbotUrl: 'https://friendbot.stellar.org',
        usdcIssuer: TESTNET_USDC_ISSUER,
        x402Network: 'stellar:testnet',
        explorerBase: 'https://stellar.expert/explorer/testnet',
      };
    case 'mainnet':
      return {
        passphrase: MAINNET_PASSPHRASE,
        // Public mainnet RPC endpoints are rate-limited: set STELLAR_RPC_URL to a provider's.
        rpcUrl: 'https://mainnet.sorobanrpc.com',
        horizonUrl: 'https://horizon.stellar.org',
        usdcIssuer: MAINNET_USDC_ISSUER,
        x402Network: 'stellar:pubnet',
        explorerBase: 'https://stellar.expert/explorer/public',
      };
  }
}

const NAMES: readonly NetworkName[] = ['local', 'testnet', 'mainnet'];
const trimSlash = (u: string) => u.replace(/\/+$/, '');
const nonEmpty = (v: string | undefined) => (v === undefined || v.trim() === '' ? undefined : v.trim());

function checkUrl(label: string, value: string, problems: string[]): void {
  try {
    const u = new URL(value);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') problems.push(`${label} must be an http(s) URL, got ${value}`);
  } catch {
    problems.push(`${label} is not a valid URL: ${value}`);
  }
}

/**
 * Resolves a network configuration. Precedence: option, then environment
 * (`STELLAR_NETWORK`, `STELLAR_CONTRACT_ID`, `STELLAR_RPC_URL`, `STELLAR_HORIZON_URL`,
 * `STELLAR_NETWORK_PASSPHRASE`, `STELLAR_USDC_ISSUER`, `STELLAR_FRIENDBOT_URL` (`none`: no
 * friendbot), `STELLAR_EXPLORER_URL`, `FAREBOX_DEVNET_URL`, `FAREBOX_DEVNET_PASSPHRASE` (local only)), then the preset. Throws `ConfigError` listing every problem.
 *
 * @example
 * const local = resolveNetwork({ network: 'local', devnetUrl: devnet.url });
 * const testnet = resolveNetwork({ network: 'testnet', contractId: 'CB...' });
 */
export function resolveNetwork(opts: ResolveNetworkOptions = {}): NetworkConfig {
  const env = opts.env ?? {};
  const problems: string[] = [];

  const rawName = nonEmpty(opts.network) ?? nonEmpty(env.STELLAR_NETWORK) ?? 'testnet';
  const name = (NAMES as readonly string[]).includes(rawName) ? (rawName as NetworkName) : undefined;
  if (!name) problems.push(`network must be one of ${NAMES.join(', ')}, got "${rawName}"`);

  const devnetUrl = trimSlash(nonEmpty(opts.devnetUrl) ?? nonEmpty(env.FAREBOX_DEVNET_URL) ?? DEFAULT_DEVNET_URL);
  if (name === 'local') checkUrl('devnetUrl', devnetUrl, problems);
  const p = preset(name ?? 'testnet', devnetUrl);

  const rpcUrl = trimSlash(nonEmpty(opts.rpcUrl) ?? nonEmpty(env.STELLAR_RPC_URL) ?? p.rpcUrl);
  const horizonUrl = trimSlash(nonEmpty(opts.horizonUrl) ?? nonEmpty(env.STELLAR_HORIZON_URL) ?? p.horizonUrl);
  // `none` turns a preset's friendbot off (a private network run like mainnet).
  const friendbotSetting = nonEmpty(opts.friendbotUrl) ?? nonEmpty(env.STELLAR_FRIENDBOT_URL);
  const friendbotUrl = friendbotSetting === 'none' ? undefined : (friendbotSetting ?? p.friendbotUrl);
  checkUrl('rpcUrl', rpcUrl, problems);
  checkUrl('horizonUrl', horizonUrl, problems);
  if (friendbotUrl) checkUrl('friendbotUrl', friendbotUrl, problems);

  const registryContractId = nonEmpty(opts.contractId) ?? nonEmpty(env.STELLAR_CONTRACT_ID) ?? p.registryContractId;
  if (registryContractId !== undefined && !StrKey.isValidContract(registryContractId)) {
    problems.push(`contractId must be a C... contract id, got "${registryContractId}"`);
  }
  let passphrase = nonEmpty(opts.passphrase) ?? nonEmpty(env.STELLAR_NETWORK_PASSPHRASE);
  if (passphrase === undefined && name === 'local') {
    try {
      passphrase = devnetPassphrase(nonEmpty(opts.devnetPassphrase) ?? nonEmpty(env.FAREBOX_DEVNET_PASSPHRASE));
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      problems.push(...e.problems);
    }
  }
  passphrase ??= p.passphrase;
  // The devnet under the testnet passphrase issues USDC under testnet's issuer, so its token is testnet's
  // contract (what stock x402 clients allow by default); the devnet mints with a signer of its own.
  const standsInForTestnet = name === 'local' && passphrase === TESTNET_PASSPHRASE;
  const usdcIssuer = nonEmpty(opts.usdcIssuer) ?? nonEmpty(env.STELLAR_USDC_ISSUER) ?? (standsInForTestnet ? TESTNET_USDC_ISSUER : p.usdcIssuer);
  if (!StrKey.isValidEd25519PublicKey(usdcIssuer)) problems.push(`usdcIssuer must be a G... public key, got "${usdcIssuer}"`);
  // The devnet under the testnet passphrase stands in for testnet (x402's stellar:testnet).
  const x402Network = standsInForTestnet ? 'stellar:testnet' : p.x402Network;
  const explorerBase = trimSlash(nonEmpty(opts.explorerUrl) ?? nonEmpty(env.STELLAR_EXPLORER_URL) ?? p.explorerBase);
  checkUrl('explorerUrl', explorerBase, problems);

  if (problems.length || !name) throw new ConfigError(problems);

  const usdc = { code: 'USDC' as const, issuer: usdcIssuer, contractId: new Asset('USDC', usdcIssuer).contractId(passphrase) };
  const config: NetworkConfig = {
    name,
    passphrase,
    rpcUrl,
    horizonUrl,
    usdc,
    x402Network,
    explorer: {
      tx: (h) => `${explorerBase}/tx/${encodeURIComponent(h)}`,
      account: (g) => `${explorerBase}/account/${encodeURIComponent(g)}`,
      contract: (c) => `${explorerBase}/contract/${encodeURIComponent(c)}`,
    },
    allowHttp: name === 'local' || [rpcUrl, horizonUrl].some((u) => u.startsWith('http://')),
  };
  if (friendbotUrl) config.friendbotUrl = trimSlash(friendbotUrl);
  if (registryContractId) config.registryContractId = registryContractId;
  return config;
}
