import {
  ESCROW_SCHEME,
  PLATFORM_FEE_PCT,
  X402_HEADERS,
  decodePaymentResponse,
  encodePaymentHeader,
  formatAmount,
  isValidStrKey,
  manifestUrl,
  parseAmount,
  parsePaymentRequired,
  toUsd,
  type PaymentRequirements,
} from '@farebox/protocol';
import { createEscrowClient, type Escrow, type EscrowClient, type EscrowRoles } from '@farebox/escrow';
import {
  createRegistryClient,
  keypairSigner,
  resolveNetwork,
  type NetworkConfig,
  type NetworkName,
  type TxSigner,
} from '@farebox/stellar';
import { Account, BASE_FEE, Operation, TransactionBuilder } from '@stellar/stellar-sdk';
import { z } from 'zod';
import { ClientError, EndpointVerificationError } from './errors.js';

/** The registry read the client needs (`createRegistryClient` from `@farebox/stellar` by default). */
export interface ServiceRegistry {
  getAgent(service: string): Promise<{ owner: string; endpoint: string; pricePerCall: bigint } | null>;
}

/** A service to call: its registry name, or an endpoint with the name or the owner to check the quote against. */
export type ServiceTarget = string | { service?: string; endpoint?: string; ownerWallet?: string };

/** The steps of a direct call, in order. */
export type DirectCallStep = 'quote' | 'deploy' | 'fund' | 'call' | 'settled';

/** One progress report: a step starts, is done, or failed. */
export interface ProgressEvent {
  step: DirectCallStep;
  phase: 'start' | 'done' | 'failed';
  /** Milliseconds since the call started. */
  elapsedMs: number;
  escrowId?: string;
  txHash?: string;
  explorerUrl?: string;
  message?: string;
}

/** One entry of a direct call's trace. */
export interface TraceStep {
  step: DirectCallStep;
  status: 'ok' | 'failed';
  /** ISO time the step started. */
  startedAt: string;
  ms: number;
  txHash?: string;
  explorerUrl?: string;
  detail?: Record<string, string>;
  error?: string;
}

/** What a paid direct call returns. */
export interface DirectCallResult<T = unknown> {
  result: T;
  cost: { baseUnits: bigint; usdc: string; usd: number };
  escrowId: string;
  quoteId: string;
  /** The release transaction, when the service released the escrow after serving. */
  releaseTx?: string;
  explorerUrl?: string;
  trace: { steps: TraceStep[] };
}

export interface CallOptions {
  onProgress?: (event: ProgressEvent) => void;
  /** Refuse a quote above this many USDC (nothing is paid). */
  maxCost?: number | string;
  /** Present an escrow that is already funded (e.g. after the call step failed in transit) instead of opening a new one. */
  escrowId?: string;
  signal?: AbortSignal;
}

export interface ClientOptions {
  /** `testnet` (default), `mainnet`, `local` (the devnet), or a resolved `NetworkConfig` of `@farebox/stellar`. */
  network?: NetworkName | NetworkConfig;
  /** The devnet's base URL (network `local`). */
  devnetUrl?: string;
  rpcUrl?: string;
  /** Registry contract id. */
  contractId?: string;
  /** The payer's key: a secret seed, or a signer (wallet, KMS). */
  secret?: string;
  signer?: TxSigner;
  /**
   * The escrow provider: an `EscrowClient` of `@farebox/escrow`, or its options.
   * `baseUrl` defaults to Trustless Work's (dev API on testnet), or `<devnet>/escrow` on `local`.
   */
  escrow?: EscrowClient | { apiKey: string; baseUrl?: string; budget?: { requests: number; windowMs: number }; maxRetries?: number };
  /** The platform treasury: escrows name it as platform address (5% fee) and dispute resolver. */
  platformAddress?: string;
  /** The gateway to ask for the treasury (`GET /v1/platform/key`) when `platformAddress` is not given. */
  gatewayUrl?: string;
  /** Registry access; default the chain's registry contract on this network. */
  registry?: ServiceRegistry;
  /** Check the service's `/manifest` against its registry record before paying. */
  verifyEndpoint?: boolean;
  /** Timeout of each request to a service, ms (default 120 000). */
  timeoutMs?: number;
  fetch?: typeof fetch;
  /** Environment for fallbacks (`TRUSTLESS_WORK_API_KEY`, `TRUSTLESS_WORK_PLATFORM_ADDRESS`, `FAREBOX_URL`); default `process.env`. */
  env?: Record<string, string | undefined>;
}

/** A dispute as the platform reports it. */
export interface DisputeResult {
  escrowId: string;
  state: 'open' | 'resolved';
  /** The on-chain dispute transaction (signed by the platform treasury), once made. */
  txHash?: string;
  explorerUrl?: string;
  resolution?: 'refund' | 'split';
  resolveTx?: string;
  resolveExplorerUrl?: string;
  /** Who got what at resolution, base units. */
  distributions?: Array<{ address: string; amount: bigint }>;
  /** Last problem the platform met (it retries). */
  error?: string;
}

export interface FareboxClient {
  readonly network: NetworkConfig;
  /** The payer's public key, when a key is configured. */
  readonly payer: string | undefined;
  /**
   * Pays a service directly: quote, open and fund a single-release escrow naming
   * the service's registry owner, call the service with `X-PAYMENT`, and return
   * its result once served (and released by the service).
   */
  call<T = unknown>(target: ServiceTarget, payload: unknown, options?: CallOptions): Promise<DirectCallResult<T>>;
  /**
   * Asks the platform (the escrow's dispute resolver) to dispute an escrow this
   * client's key funded: a proof signed by the key goes to `POST /v1/disputes`
   * of `gatewayUrl`; the treasury disputes it on chain and resolves it (a full
   * refund by the automatic policy when the service never served, or an
   * operator's decision). Needs `gatewayUrl`.
   */
  dispute(escrowId: string, options?: { reason?: string }): Promise<DisputeResult>;
  /** The platform's record of a dispute (undefined when there is none). */
  getDispute(escrowId: string): Promise<DisputeResult | undefined>;
  /** Reads an escrow from the escrow provider. */
  getEscrow(escrowId: string): Promise<Escrow | undefined>;
  /** Compares a service's `/manifest` with its registry record; throws {@link EndpointVerificationError} on a mismatch. */
  verifyEndpoint(target: ServiceTarget): Promise<{ service: string; ownerWallet: string; endpoint: string }>;
}

const ESCROW_BASE_URLS: Record<Exclude<NetworkName, 'local'>, string> = {
  testnet: 'https://dev.api.trustlesswork.com',
  mainnet: 'https://api.trustlesswork.com',
};

const ErrorBodySchema = z.object({ error: z.string() });
const ManifestSchema = z.looseObject({ service: z.string(), ownerWallet: z.string() });
const PlatformKeySchema = z.looseObject({ treasury: z.string() });
/** Name of the dispute proof's manageData operation (docs/operator.md). */
const DISPUTE_PROOF_DATA_NAME = 'farebox_dispute';
const DisputeBodySchema = z.looseObject({
  escrow_id: z.string(),
  state: z.enum(['open', 'resolved']),
  dispute_tx: z.string().nullable().optional(),
  dispute_explorer_url: z.string().nullable().optional(),
  resolution: z.enum(['refund', 'split']).nullable().optional(),
  resolve_tx: z.string().nullable().optional(),
  resolve_explorer_url: z.string().nullable().optional(),
  distributions: z.array(z.looseObject({ address: z.string(), base_units: z.union([z.number().int(), z.string().regex(/^\d+$/)]) })).nullable().optional(),
  error: z.string().nullable().optional(),
});
const QuoteExtraSchema = z.looseObject({
  quoteId: z.string().min(1).max(256),
  service: z.string().optional(),
  escrow: z.looseObject({ platformAddress: z.string().optional(), platformFee: z.number().optional() }).optional(),
});

function errorText(e: unknown): string {
  return e instanceof Error && e.message ? e.message : String(e);
}

function usdc(units: bigint): string {
  return `${formatAmount(units, { trim: true })} USDC`;
}

/**
 * Creates a direct-path client: pays Farebox services from the caller's own
 * key through a single-use escrow (no platform in the middle).
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
  if (!signer && options.secret !== undefined) {
    try {
      signer = keypairSigner(options.secret);
    } catch {
      problems.push('secret is not a valid S... secret seed');
    }
  }
  const platformOption = options.platformAddress ?? env.TRUSTLESS_WORK_PLATFORM_ADDRESS;
  if (platformOption !== undefined && !isValidStrKey('publicKey', platformOption)) problems.push('platformAddress must be a G... public key');
  const gatewayUrl = options.gatewayUrl ?? env.FAREBOX_URL;
  const timeoutMs = options.timeoutMs ?? 120_000;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) problems.push('timeoutMs must be a positive number');
  if (problems.length > 0 || !network) throw new ClientError('CONFIG', `createClient: ${problems.join('; ')}`);
  const net = network;
  const doFetch = options.fetch ?? globalThis.fetch;

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
      if (!gatewayUrl) throw new ClientError('CONFIG', 'no platform address: pass platformAddress (the platform treasury) or gatewayUrl to read it from /v1/platform/key');
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
    if (!gatewayUrl) throw new ClientError('CONFIG', `${what}: disputes go through the platform (the escrow's dispute resolver): pass gatewayUrl (FAREBOX_URL)`);
    return gatewayUrl.replace(/\/+$/, '');
  }

  function disputeResult(json: unknown, escrowId: string): DisputeResult {
    const parsed = DisputeBodySchema.safeParse(json);
    if (!parsed.success || parsed.data.escrow_id !== escrowId) throw new ClientError('BAD_RESPONSE', `the platform answered the dispute of ${escrowId} with an unexpected body`, { escrowId });
    const d = parsed.data;
    return {
      escrowId,
      state: d.state,
      ...(d.dispute_tx ? { txHash: d.dispute_tx, explorerUrl: d.dispute_explorer_url ?? net.explorer.tx(d.dispute_tx) } : {}),
      ...(d.resolution ? { resolution: d.resolution } : {}),
      ...(d.resolve_tx ? { resolveTx: d.resolve_tx, resolveExplorerUrl: d.resolve_explorer_url ?? net.explorer.tx(d.resolve_tx) } : {}),
      ...(d.distributions ? { distributions: d.distributions.map((x) => ({ address: x.address, amount: BigInt(x.base_units) })) } : {}),
      ...(d.error ? { error: d.error } : {}),
    };
  }

  async function request(url: string, init: RequestInit & { signal?: AbortSignal }): Promise<{ status: number; headers: Headers; json: unknown; text: string }> {
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    let res: Response;
    try {
      res = await doFetch(url, { ...init, signal, redirect: 'error' });
    } catch (e) {
      throw new ClientError('NETWORK', `request to ${url} failed: ${errorText(e)}`);
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, json, text };
  }

  function serverMessage(json: unknown, text: string): string {
    const parsed = ErrorBodySchema.safeParse(json);
    return parsed.success ? parsed.data.error : text.slice(0, 300);
  }

  /** Endpoint, expected owner and registry name of a target. */
  async function resolve(target: ServiceTarget): Promise<{ service?: string; endpoint: string; owner: string }> {
    const spec = typeof target === 'string' ? { service: target } : target;
    if (typeof spec !== 'object' || spec === null) throw new ClientError('CONFIG', 'target must be a service name or { service?, endpoint?, ownerWallet? }');
    if (spec.ownerWallet !== undefined && !isValidStrKey('publicKey', spec.ownerWallet)) throw new ClientError('CONFIG', 'ownerWallet must be a G... public key');
    if (spec.service !== undefined) {
      let agent;
      try {
        agent = await registryApi().getAgent(spec.service);
      } catch (e) {
        if (e instanceof ClientError) throw e;
        throw new ClientError('NETWORK', `cannot read the registry: ${errorText(e)}`, { service: spec.service });
      }
      if (!agent) throw new ClientError('NOT_FOUND', `service "${spec.service}" is not in the registry`, { service: spec.service });
      if (spec.ownerWallet !== undefined && spec.ownerWallet !== agent.owner) {
        throw new ClientError('PAYTO_MISMATCH', `service "${spec.service}" is owned by ${agent.owner} in the registry, not by ${spec.ownerWallet}`, { service: spec.service });
      }
      return { service: spec.service, endpoint: spec.endpoint ?? agent.endpoint, owner: agent.owner };
    }
    if (!spec.endpoint) throw new ClientError('CONFIG', 'target needs a service name or an endpoint');
    if (!spec.ownerWallet) {
      throw new ClientError('CONFIG', 'an endpoint without a service name needs ownerWallet: the quote must name a receiver you trust');
    }
    return { endpoint: spec.endpoint, owner: spec.ownerWallet };
  }

  async function verify(resolved: { service?: string; endpoint: string; owner: string }, signal?: AbortSignal) {
    const url = manifestUrl(resolved.endpoint);
    const { status, json } = await request(url, { method: 'GET', ...(signal ? { signal } : {}) });
    const manifest = ManifestSchema.safeParse(json);
    if (status !== 200 || !manifest.success) {
      throw new EndpointVerificationError(`${url} did not answer with a manifest (HTTP ${status})`, { status, ...(resolved.service ? { service: resolved.service } : {}) });
    }
    const m = manifest.data;
    if (resolved.service !== undefined && m.service !== resolved.service) {
      throw new EndpointVerificationError(`the endpoint ${resolved.endpoint} serves "${m.service}", not "${resolved.service}" as the registry says`, { service: resolved.service });
    }
    if (m.ownerWallet !== resolved.owner) {
      throw new EndpointVerificationError(`the endpoint ${resolved.endpoint} is owned by ${m.ownerWallet}, the registry owner is ${resolved.owner}`, {
        ...(resolved.service ? { service: resolved.service } : {}),
      });
    }
    return { service: m.service, ownerWallet: m.ownerWallet, endpoint: resolved.endpoint };
  }

  function requireSigner(): TxSigner {
    if (!signer) throw new ClientError('CONFIG', 'no payer key: pass secret or signer to createClient');
    return signer;
  }

  async function call<T>(target: ServiceTarget, payload: unknown, callOptions: CallOptions = {}): Promise<DirectCallResult<T>> {
    const payer = requireSigner();
    const started = Date.now();
    const steps: TraceStep[] = [];
    const report = (event: Omit<ProgressEvent, 'elapsedMs'>) => {
      try {
        callOptions.onProgress?.({ ...event, elapsedMs: Date.now() - started });
      } catch {
        // A failing progress callback must not break a payment in flight.
      }
    };
    let escrowId: string | undefined = callOptions.escrowId;
    async function step<R>(name: DirectCallStep, fn: () => Promise<R>, describe: (r: R) => Omit<TraceStep, 'step' | 'status' | 'startedAt' | 'ms'> = () => ({})): Promise<R> {
      const t0 = Date.now();
      report({ step: name, phase: 'start', ...(escrowId ? { escrowId } : {}) });
      try {
        const r = await fn();
        const extra = describe(r);
        steps.push({ step: name, status: 'ok', startedAt: new Date(t0).toISOString(), ms: Date.now() - t0, ...extra });
        report({
          step: name,
          phase: 'done',
          ...(escrowId ? { escrowId } : {}),
          ...(extra.txHash ? { txHash: extra.txHash } : {}),
          ...(extra.explorerUrl ? { explorerUrl: extra.explorerUrl } : {}),
        });
        return r;
      } catch (e) {
        const err = e instanceof ClientError ? e : new ClientError('ESCROW', `${name} failed: ${errorText(e)}`, escrowId ? { escrowId } : {});
        if (escrowId && err.data.escrowId === undefined) err.data.escrowId = escrowId;
        steps.push({ step: name, status: 'failed', startedAt: new Date(t0).toISOString(), ms: Date.now() - t0, error: err.message });
        report({ step: name, phase: 'failed', message: err.message, ...(escrowId ? { escrowId } : {}) });
        err.data.trace = { steps: [...steps] };
        throw err;
      }
    }

    let body: string;
    try {
      body = JSON.stringify(payload ?? null);
    } catch (e) {
      throw new ClientError('CONFIG', `payload is not JSON-serialisable: ${errorText(e)}`);
    }
    const maxCost = callOptions.maxCost !== undefined ? parseMax(callOptions.maxCost) : undefined;
    const resolved = await resolve(target);
    if (options.verifyEndpoint) await verify(resolved, callOptions.signal);
    const signal = callOptions.signal;
    const post = (headers: Record<string, string>) =>
      request(resolved.endpoint, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers }, ...(signal ? { signal } : {}) });

    const quote = await step(
      'quote',
      async () => {
        const answer = await post({});
        if (answer.status !== 402) {
          throw new ClientError('QUOTE', `expected a 402 quote from ${resolved.endpoint}, got HTTP ${answer.status}: ${serverMessage(answer.json, answer.text)}`, {
            status: answer.status,
            serverMessage: serverMessage(answer.json, answer.text),
          });
        }
        return pickQuote(answer, resolved, maxCost);
      },
      (q) => ({ detail: { amount: q.amount.toString(), payTo: q.requirement.payTo, quoteId: q.quoteId } }),
    );
    const treasury = await platformAddress();
    const quotedPlatform = quote.extra.escrow?.platformAddress;
    if (quotedPlatform !== undefined && quotedPlatform !== treasury) {
      throw new ClientError('QUOTE', `the service expects escrows for platform ${quotedPlatform}, this client uses ${treasury}: nothing was paid`, {
        ...(resolved.service ? { service: resolved.service } : {}),
      });
    }

    let quoteId = quote.quoteId;
    if (escrowId) {
      const existing = await escrowApi().getEscrows([escrowId]);
      const found = existing.find((e) => e.contractId === escrowId);
      if (!found) throw new ClientError('ESCROW', `escrow ${escrowId} not found`, { escrowId });
      if (found.roles.receiver !== resolved.owner) throw new ClientError('PAYTO_MISMATCH', `escrow ${escrowId} pays ${found.roles.receiver}, not ${resolved.owner}`, { escrowId });
      quoteId = found.engagementId;
    } else {
      const roles: EscrowRoles = {
        approver: resolved.owner,
        serviceProvider: resolved.owner,
        releaseSigner: resolved.owner,
        receiver: resolved.owner,
        platformAddress: treasury,
        disputeResolver: treasury,
      };
      const name = resolved.service ?? 'service';
      const deployed = await step(
        'deploy',
        () =>
          escrowApi().deployAndSend(
            {
              engagementId: quoteId,
              title: `Farebox call: ${name}`.slice(0, 100),
              description: `Farebox direct call to ${name}; quote ${quoteId}; payer ${payer.publicKey}`,
              roles,
              amount: quote.amount,
              platformFee: PLATFORM_FEE_PCT,
              milestones: [{ description: `serve one call of ${name}` }],
              trustline: { address: net.usdc.contractId, symbol: 'USDC', decimals: 7 },
            },
            payer,
          ),
        (r) => ({ txHash: r.txHash, explorerUrl: net.explorer.tx(r.txHash), detail: { escrowId: r.contractId } }),
      );
      escrowId = deployed.contractId;
      await step(
        'fund',
        () => escrowApi().run('fundEscrow', { contractId: deployed.contractId, signer: payer.publicKey, amount: quote.amount }, payer),
        (r) => ({ txHash: r.txHash, explorerUrl: net.explorer.tx(r.txHash), detail: { amount: quote.amount.toString() } }),
      );
    }
    const paidEscrow = escrowId;

    const served = await step(
      'call',
      async () => {
        const answer = await post({ [X402_HEADERS.payment]: encodePaymentHeader({ escrowId: paidEscrow, network: net.x402Network, quoteId }, 1) });
        if (answer.status === 200) return answer;
        const msg = serverMessage(answer.json, answer.text);
        const data = { status: answer.status, serverMessage: msg, escrowId: paidEscrow, ...(resolved.service ? { service: resolved.service } : {}) };
        if (answer.status === 402 || answer.status === 409) throw new ClientError('PAYMENT_REFUSED', `the service refused escrow ${paidEscrow}: ${msg}`, data);
        throw new ClientError('SERVICE', `the service failed after escrow ${paidEscrow} was funded (HTTP ${answer.status}): ${msg}; open a dispute to be refunded`, data);
      },
      () => ({ detail: { escrowId: paidEscrow } }),
    );

    let releaseTx: string | undefined;
    await step(
      'settled',
      async () => {
        const header = served.headers.get(X402_HEADERS.paymentResponse) ?? served.headers.get(X402_HEADERS.paymentResponseV2);
        if (!header) return undefined;
        try {
          const receipt = decodePaymentResponse(header);
          if (receipt.success && receipt.transaction !== paidEscrow) releaseTx = receipt.transaction;
        } catch {
          // An unreadable receipt does not undo a served call.
        }
        return undefined;
      },
      () => (releaseTx ? { txHash: releaseTx, explorerUrl: net.explorer.tx(releaseTx) } : { detail: { released: 'unconfirmed' } }),
    );

    return {
      result: served.json as T,
      cost: { baseUnits: quote.amount, usdc: formatAmount(quote.amount, { trim: true }), usd: toUsd(quote.amount) },
      escrowId: paidEscrow,
      quoteId,
      ...(releaseTx ? { releaseTx, explorerUrl: net.explorer.tx(releaseTx) } : {}),
      trace: { steps },
    };
  }

  function parseMax(value: number | string): bigint {
    try {
      return parseAmount(value);
    } catch (e) {
      throw new ClientError('CONFIG', `maxCost: ${errorText(e)}`);
    }
  }

  function pickQuote(
    answer: { headers: Headers; json: unknown },
    resolved: { service?: string; endpoint: string; owner: string },
    maxCost: bigint | undefined,
  ): { requirement: PaymentRequirements; amount: bigint; quoteId: string; extra: z.infer<typeof QuoteExtraSchema> } {
    let parsed;
    try {
      parsed = parsePaymentRequired({ headers: answer.headers, body: answer.json });
    } catch (e) {
      throw new ClientError('QUOTE', `${resolved.endpoint} answered 402 without a readable x402 quote: ${errorText(e)}`);
    }
    const requirement = parsed.accepts.find((a) => a.scheme === ESCROW_SCHEME && a.network === net.x402Network);
    if (!requirement) throw new ClientError('QUOTE', `the service offers no escrow payment on ${net.x402Network}`);
    if (requirement.payTo !== resolved.owner) {
      throw new ClientError('PAYTO_MISMATCH', `the quote asks to pay ${requirement.payTo}, but the service's registry owner is ${resolved.owner}: nothing was paid`, {
        ...(resolved.service ? { service: resolved.service } : {}),
      });
    }
    const asset = `USDC:${net.usdc.issuer}`;
    if (requirement.asset !== asset) throw new ClientError('QUOTE', `the quote asks for ${requirement.asset}, not ${asset}`);
    if (requirement.amount <= 0n) throw new ClientError('QUOTE', 'the quote amount is not positive');
    if (maxCost !== undefined && requirement.amount > maxCost) {
      throw new ClientError('PRICE_LIMIT', `the service asks ${usdc(requirement.amount)}, above maxCost ${usdc(maxCost)}: nothing was paid`);
    }
    const extra = QuoteExtraSchema.safeParse(requirement.extra);
    if (!extra.success) throw new ClientError('QUOTE', 'the quote carries no quoteId (extra.quoteId): refusing to pay an escrow that cannot be bound to it');
    return { requirement, amount: requirement.amount, quoteId: extra.data.quoteId, extra: extra.data };
  }

  return {
    network: net,
    payer: signer?.publicKey,
    call,
    async dispute(escrowId, disputeOptions = {}) {
      const who = requireSigner();
      if (!isValidStrKey('contract', escrowId)) throw new ClientError('CONFIG', 'escrowId must be a C... contract id');
      if (disputeOptions.reason !== undefined && (typeof disputeOptions.reason !== 'string' || disputeOptions.reason.length > 500)) throw new ClientError('CONFIG', 'reason must be a string of at most 500 characters');
      const base = platformUrl('dispute');
      // The proof: a transaction that can never be applied (sequence 0), one manageData naming the escrow, signed by the funder.
      const nowS = Math.floor(Date.now() / 1000);
      const unsigned = new TransactionBuilder(new Account(who.publicKey, '-1'), { fee: BASE_FEE, networkPassphrase: net.passphrase })
        .addOperation(Operation.manageData({ name: DISPUTE_PROOF_DATA_NAME, value: escrowId }))
        .setTimebounds(nowS - 30, nowS + 300)
        .build()
        .toXDR();
      let proof: string;
      try {
        proof = await who.signTransaction(unsigned, net.passphrase);
      } catch (e) {
        throw new ClientError('CONFIG', `the signer refused to sign the dispute proof: ${errorText(e)}`, { escrowId });
      }
      const answer = await request(`${base}/v1/disputes`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ escrowId, proof, ...(disputeOptions.reason !== undefined ? { reason: disputeOptions.reason } : {}) }),
      });
      if (answer.status !== 200 && answer.status !== 201) {
        const msg = serverMessage(answer.json, answer.text);
        throw new ClientError('ESCROW', `dispute of escrow ${escrowId} refused by the platform (HTTP ${answer.status}): ${msg}`, { escrowId, status: answer.status, serverMessage: msg });
      }
      return disputeResult(answer.json, escrowId);
    },
    async getDispute(escrowId) {
      if (!isValidStrKey('contract', escrowId)) throw new ClientError('CONFIG', 'escrowId must be a C... contract id');
      const answer = await request(`${platformUrl('dispute status')}/v1/disputes/${escrowId}`, { method: 'GET' });
      if (answer.status === 404) return undefined;
      if (answer.status !== 200) throw new ClientError('BAD_RESPONSE', `dispute status: HTTP ${answer.status}: ${serverMessage(answer.json, answer.text)}`, { escrowId, status: answer.status });
      return disputeResult(answer.json, escrowId);
    },
    async getEscrow(escrowId) {
      const found = await escrowApi().getEscrows([escrowId]);
      return found.find((e) => e.contractId === escrowId);
    },
    async verifyEndpoint(target) {
      return verify(await resolve(target));
    },
  };
}
