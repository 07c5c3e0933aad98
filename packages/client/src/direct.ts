import { isValidStrKey } from '@farebox/protocol';
import { createEscrowClient, type EscrowClient } from '@farebox/escrow';
import { createRegistryClient, keypairSigner, resolveNetwork, type NetworkConfig, type NetworkName, type TxSigner } from '@farebox/stellar';
import { contract, Keypair } from '@stellar/stellar-sdk';
import { z } from 'zod';
import { ClientError } from './errors.js';
import { payAndCall } from './direct/call.js';
import type { DirectContext } from './direct/context.js';
import { openDispute, readDispute } from './direct/dispute.js';
import { resolveTarget, verifyManifest } from './direct/endpoint.js';
import type { AuthEntrySigner } from './direct/exact.js';
import { createRequester, errorText } from './direct/http.js';
import type { ClientOptions, FareboxClient, ServiceRegistry } from './direct/types.js';

export type {
  CallOptions,
  ClientOptions,
  DirectCallResult,
  DirectCallStep,
  DisputeResult,
  FareboxClient,
  ProgressEvent,
  ServiceRegistry,
  ServiceTarget,
  TraceStep,
} from './direct/types.js';

const ESCROW_BASE_URLS: Record<Exclude<NetworkName, 'local'>, string> = {
  testnet: 'https://dev.api.trustlesswork.com',
  mainnet: 'https://api.trustlesswork.com',
};

const PlatformKeySchema = z.looseObject({ treasury: z.string() });

/**
 * Creates a direct-path client: pays Farebox services from the caller's own
 * key, with the standard x402 `exact` scheme where offered (one USDC transfer,
 * settled by the service's facilitator), else through a single-use escrow.
 *
 * @example
 * const client = createClient({ network: 'testnet', secret: process.env.STELLAR_SECRET, escrow: { apiKey }, platformAddress });
 * const { result, cost, releaseTx } = await client.call('echo', { text: 'hi' }, { onProgress: (e) => console.log(e.step, e.phase) });
 */
export function createClient(options: ClientOptions = {}): FareboxClient {
  const env = options.env ?? (typeof process !== 'undefined' ? process.env : {});
  const problems: string[] = [];
  let network: NetworkConfig | undefined;
  if (typeof options.network === 'object' && options.network !== null) network = options.network;
  else {
    try {
      network = resolveNetwork({
        ...(options.network !== undefined ? { network: options.network } : {}),
        ...(options.devnetUrl !== undefined ? { devnetUrl: options.devnetUrl } : {}),
        ...(options.rpcUrl !== undefined ? { rpcUrl: options.rpcUrl } : {}),
        ...(options.contractId !== undefined ? { contractId: options.contractId } : {}),
        env,
      });
    } catch (e) {
      problems.push(errorText(e));
    }
  }
  let signer: TxSigner | undefined = options.signer;
  let authSigner: AuthEntrySigner | undefined;
  if (!signer && options.secret !== undefined) {
    try {
      signer = keypairSigner(options.secret);
      if (network)
        authSigner = {
          address: signer.publicKey,
          signAuthEntry: contract.basicNodeSigner(Keypair.fromSecret(options.secret), network.passphrase).signAuthEntry,
        };
    } catch {
      problems.push('secret is not a valid S... secret seed');
    }
  } else if (signer && typeof options.signer?.signAuthEntry === 'function') {
    authSigner = { address: signer.publicKey, signAuthEntry: options.signer.signAuthEntry };
  }
  if (options.exact !== undefined && typeof options.exact !== 'boolean') problems.push('exact must be a boolean');
  if (options.exact === false) authSigner = undefined;
  const platformOption = options.platformAddress ?? env.TRUSTLESS_WORK_PLATFORM_ADDRESS;
  if (platformOption !== undefined && !isValidStrKey('publicKey', platformOption)) problems.push('platformAddress must be a G... public key');
  const gatewayUrl = options.gatewayUrl ?? env.FAREBOX_URL;
  const timeoutMs = options.timeoutMs ?? 120_000;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) problems.push('timeoutMs must be a positive number');
  if (problems.length > 0 || !network) throw new ClientError('CONFIG', `createClient: ${problems.join('; ')}`);
  const net = network;
  const doFetch = options.fetch ?? globalThis.fetch;
  const request = createRequester(doFetch, timeoutMs);

  let escrowClient: EscrowClient | undefined;
  function escrowApi(): EscrowClient {
    if (escrowClient) return escrowClient;
    const given = options.escrow;
    if (given && 'getEscrows' in given) return (escrowClient = given);
    const apiKey = given?.apiKey ?? env.TRUSTLESS_WORK_API_KEY;
    if (!apiKey) throw new ClientError('CONFIG', 'no escrow API key: pass escrow: { apiKey } or set TRUSTLESS_WORK_API_KEY');
    const baseUrl = given?.baseUrl ?? (net.name === 'local' ? `${net.horizonUrl}/escrow` : ESCROW_BASE_URLS[net.name]);
    escrowClient = createEscrowClient({
      baseUrl,
      apiKey,
      passphrase: net.passphrase,
      fetch: doFetch,
      ...(given?.budget ? { budget: given.budget } : {}),
      ...(given?.maxRetries !== undefined ? { maxRetries: given.maxRetries } : {}),
    });
    return escrowClient;
  }

  let registry: ServiceRegistry | undefined = options.registry;
  function registryApi(): ServiceRegistry {
    if (registry) return registry;
    if (!net.registryContractId) throw new ClientError('CONFIG', `no registry contract id on ${net.name}: pass contractId (STELLAR_CONTRACT_ID)`);
    registry = createRegistryClient(net);
    return registry;
  }

  let treasury: Promise<string> | undefined;
  function platformAddress(): Promise<string> {
    if (platformOption) return Promise.resolve(platformOption);
    treasury ??= (async () => {
      if (!gatewayUrl)
        throw new ClientError('CONFIG', 'no platform address: pass platformAddress (the platform treasury) or gatewayUrl to read it from /v1/platform/key');
      const { status, json } = await request(`${gatewayUrl.replace(/\/+$/, '')}/v1/platform/key`, { method: 'GET' });
      const parsed = PlatformKeySchema.safeParse(json);
      if (status !== 200 || !parsed.success || !isValidStrKey('publicKey', parsed.data.treasury)) {
        throw new ClientError('BAD_RESPONSE', `the gateway's /v1/platform/key did not name a treasury (HTTP ${status})`, { status });
      }
      return parsed.data.treasury;
    })();
    treasury.catch(() => {
      treasury = undefined;
    });
    return treasury;
  }

  function platformUrl(what: string): string {
    if (!gatewayUrl)
      throw new ClientError('CONFIG', `${what}: disputes go through the platform (the escrow's dispute resolver): pass gatewayUrl (FAREBOX_URL)`);
    return gatewayUrl.replace(/\/+$/, '');
  }

  const ctx: DirectContext = {
    net,
    signer,
    authSigner,
    request,
    fetch: doFetch,
    timeoutMs,
    verifyEndpoint: Boolean(options.verifyEndpoint),
    escrowApi,
    registryApi,
    platformAddress,
    platformUrl,
  };

  return {
    network: net,
    payer: signer?.publicKey,
    call: (target, payload, callOptions) => payAndCall(ctx, target, payload, callOptions),
    dispute: (escrowId, disputeOptions) => openDispute(ctx, escrowId, disputeOptions),
    getDispute: (escrowId) => readDispute(ctx, escrowId),
    async getEscrow(escrowId) {
      const found = await escrowApi().getEscrows([escrowId]);
      return found.find((e) => e.contractId === escrowId);
    },
    async verifyEndpoint(target) {
      return verifyManifest(request, await resolveTarget(target, registryApi));
    },
  };
}
