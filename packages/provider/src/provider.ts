import {
  CERTIFICATE_HEADER,
  ConfigError,
  PLATFORM_FEE_PCT,
  X402_HEADERS,
  base64UrlEncode,
  buildPaymentRequired,
  encodePaymentResponse,
  formatAmount,
  parsePaymentHeader,
  paymentHeaderScheme,
  randomBytes,
  toUsd,
  verifyCallCertificate,
  type EscrowPayment,
  type Manifest,
} from '@farebox/protocol';
import { createRegistryClient, type RegistryClient } from '@farebox/stellar';
import { linkOwnerToAccount, localGateway, type AccountLinkOptions, type AccountLinkResult } from './account-link.js';
import { bootstrapOnChain, type BootstrapResult } from './bootstrap.js';
import { NO_PAYMENT_MESSAGE, resolveConfig, type ProviderOptions, type ResolvedProviderConfig } from './config.js';
import { ProviderError } from './errors.js';
import { defaultEscrowVerifier } from './escrow-default.js';
import { exactCall } from './exact-call.js';
import { chargeCall, createMppCharges } from './mpp-charge.js';
import { parsePayload, pricePayload } from './payload.js';
import { createExactPayments } from './exact.js';
import { createExpressMiddleware, listenHttp, type ExpressMiddleware, type ListeningProvider } from './http.js';
import type { RegistryReader } from './ports.js';
import { QuoteRateLimiter } from './rate-limit.js';
import { InMemoryReplayStore } from './replay.js';
import { fail, formatLimit, readHeader, respond, serialized, type ProviderResponse } from './response.js';

export type { ProviderResponse } from './response.js';
export type { BootstrapResult } from './bootstrap.js';

/** Header values as hosts hand them over: a plain record (any case) or a fetch `Headers`. */
export type HeadersInput = Headers | Record<string, string | string[] | undefined>;

/** One request to the framework-agnostic core. */
export interface PaidRequest {
  /** The exact request bytes (needed to verify a platform-signed call); a string is taken as UTF-8. */
  rawBody?: Uint8Array | string;
  /** The parsed JSON body, when the host parsed it and has no raw bytes (platform-signed calls then fail). */
  body?: unknown;
  headers?: HeadersInput;
  /** Caller IP, for the quote rate limit. */
  ip?: string;
  /** Default `POST`. `GET` serves `/manifest` and `/health`. */
  method?: string;
  /** Request path; when given, routes between the paid route, `/manifest` and `/health`. */
  path?: string;
}

/** How the call being served was paid. */
export interface CallContext {
  paidWith: 'platform' | 'escrow' | 'exact';
  /** Amount paid, base units. */
  amount: bigint;
  /** This payload's price, base units. */
  price: bigint;
  /** The gateway's call id (platform-signed calls). */
  callId?: string;
  /** The escrow served (escrow payments). */
  escrowId?: string;
  /** Exact payments with `exact.settle: 'before-handler'`: the settlement transaction (by default it is settled after the handler answered: unset). */
  transaction?: string;
  /** Who paid (escrow and exact payments). */
  payer?: string;
  ip?: string;
}

/** The service itself: gets the payload after payment is verified and returns any JSON value. */
export type ServiceHandler = (payload: unknown, context: CallContext) => unknown;

export interface Provider {
  /** The resolved configuration (no secrets). */
  readonly config: ResolvedProviderConfig;
  /** Sets the handler; returns the provider. */
  serve(handler: ServiceHandler): Provider;
  /** The framework-agnostic core. Never throws: every outcome is a response. */
  handle(request: PaidRequest): Promise<ProviderResponse>;
  /** Express (4/5) or connect middleware serving the paid route, `/manifest` and `/health`. Mount it before any body parser. */
  express(): ExpressMiddleware;
  /** Starts a node:http server on `port` (0 for an ephemeral one). */
  listen(port?: number, host?: string): Promise<ListeningProvider>;
  /** The `/manifest` document. */
  manifest(): Manifest;
  /**
   * Puts the service on-chain, signing as the owner: funds the account through
   * the friendbot (local, testnet), sets the USDC trustline, then registers the
   * service or updates the price, endpoint and description that changed. With `account` (an API key of a
   * publisher account), it then links the owner key to that account, so its earnings show there (`linked`).
   */
  bootstrap(options?: { account?: AccountLinkOptions }): Promise<BootstrapResult & { linked?: AccountLinkResult }>;
  /** Closes every server started by listen(). */
  close(): Promise<void>;
}

function isRegistryClient(registry: RegistryReader | RegistryClient | undefined): registry is RegistryClient {
  const r = registry as Partial<RegistryClient> | undefined;
  return typeof r?.register === 'function' && typeof r.update === 'function';
}

const utf8Encoder = new TextEncoder();

/**
 * Creates a provider: the publisher side of Farebox. Validates every option
 * at once (throws `ConfigError` listing all problems).
 *
 * @example
 * const provider = createProvider({ service: 'echo', pricePerCall: 0.001, endpoint: 'https://echo.example.com' });
 * provider.serve(async (payload) => ({ echo: payload }));
 * await provider.listen(8080);
 */
export function createProvider(options: ProviderOptions): Provider {
  const { config, stellar, walletSecret, escrowApiKey } = resolveConfig(options);
  const now = options.now ?? Date.now;
  const replayStore = options.replayStore ?? new InMemoryReplayStore({ now });
  const limiter = new QuoteRateLimiter(config.rateLimitPerMinute, now);
  const charges = createMppCharges({ now });
  // The chain is the default registry: the owner check runs against the contract itself.
  const registry: RegistryReader | RegistryClient | undefined =
    options.registry ?? (config.contractId !== undefined ? createRegistryClient(stellar) : undefined);
  const escrowVerifier = options.escrowVerifier ?? defaultEscrowVerifier(config, stellar, walletSecret, escrowApiKey);
  const priceFn = options.priceFn;
  const manifestPaths = new Set(['/manifest']);
  const healthPaths = new Set(['/health']);
  if (config.endpointPath !== '/') {
    manifestPaths.add(`${config.endpointPath}/manifest`);
    healthPaths.add(`${config.endpointPath}/health`);
  }
  let handler: ServiceHandler | undefined;
  let listenUrl: string | undefined;
  let registration: { error: string | null; until: number } | undefined;
  const servers = new Set<ListeningProvider>();

  const degradedMessage =
    config.contractId === undefined && !config.allowUnverified
      ? `degraded mode: no registry contractId is configured (set the contractId option or STELLAR_CONTRACT_ID), so callers cannot verify this service's owner; refusing to serve paid calls. Pass allowUnverified: true for a local demo only.`
      : undefined;
  const warn = options.onWarning ?? ((message: string) => console.warn(`farebox provider ${config.service}: ${message}`));
  for (const message of config.warnings) warn(message);
  const noPayment = config.platformPublicKey === undefined && !config.escrow.enabled && !config.exact;
  const exact = config.exact
    ? createExactPayments({
        exact: config.exact,
        service: config.service,
        network: config.x402Network,
        passphrase: stellar.passphrase,
        ...(config.exact.settle === 'before-handler' && config.exact.platform && walletSecret ? { ownerSecret: walletSecret } : {}),
        ...(options.exact && options.exact.servedStore !== undefined ? { store: options.exact.servedStore } : {}),
        now,
        warn,
      })
    : undefined;

  function publicEndpoint(headers?: HeadersInput): string {
    if (config.endpoint) return config.endpoint;
    if (listenUrl) return listenUrl;
    const host = readHeader(headers, 'host');
    return host ? `http://${host}${config.endpointPath}` : config.endpointPath;
  }

  // Escrow is offered only when it can be served right now: a quote that offers it makes callers lock USDC in an escrow.
  const escrowServed = config.escrow.enabled && escrowVerifier !== undefined;
  const noDirectPayment = `${config.service} takes no direct payment: it is paid through the gateway only`;

  /** How this service can be paid now: the manifest's `payments`, and the quote offers `escrow` exactly when it is listed. */
  function payments(): Array<'platform' | 'escrow' | 'exact'> {
    const out: Array<'platform' | 'escrow' | 'exact'> = [];
    if (config.platformPublicKey) out.push('platform');
    if (escrowServed) out.push('escrow');
    if (exact) out.push('exact');
    return out;
  }

  function manifest(): Manifest {
    const endpoint = config.endpoint ?? listenUrl;
    return {
      service: config.service,
      ownerWallet: config.ownerWallet,
      pricePerCall: toUsd(config.pricePerCall),
      priceBaseUnits: config.pricePerCall.toString(),
      ...(config.pricingNote !== undefined ? { pricingNote: config.pricingNote } : {}),
      description: config.description,
      dynamicPricing: config.dynamicPricing,
      payments: payments(),
      network: config.network,
      ...(config.platformPublicKey ? { platformPublicKey: config.platformPublicKey } : {}),
      ...(config.contractId ? { contractId: config.contractId } : {}),
      ...(endpoint ? { endpoint } : {}),
      ...(config.bazaar ? { bazaar: config.bazaar } : {}),
    };
  }

  /**
   * The 402 answer. With escrow served: one `escrow` offer. Without: `accepts`
   * is empty, the error says the service is paid through the gateway only, and
   * the price and `payments` sit in the top-level `extra` (the gateway reprices from it).
   */
  async function quote(
    price: bigint,
    headers: HeadersInput | undefined,
    error?: string,
    more: { message?: string; header?: string } = {},
  ): Promise<ProviderResponse> {
    const exactOffer = await exact?.offer(price);
    const extra: Record<string, unknown> = {
      service: config.service,
      priceBaseUnits: price.toString(),
      price: formatAmount(price, { trim: true }),
      ...(escrowServed
        ? {
            quoteId:
              escrowVerifier?.quoteId?.({ service: config.service, payTo: config.ownerWallet, amount: price, network: config.x402Network }) ??
              `q_${base64UrlEncode(randomBytes(12))}`,
          }
        : { payments: payments() }),
      ...(config.pricingNote !== undefined ? { pricingNote: config.pricingNote } : {}),
      ...(config.platformPublicKey ? { platformPublicKey: config.platformPublicKey } : {}),
      ...(escrowServed ? { escrow: { platformAddress: config.escrow.platformAddress, platformFee: PLATFORM_FEE_PCT } } : {}),
    };
    if (!escrowServed && !exactOffer)
      error ??= exact ? `${config.service} cannot take exact payments right now: its facilitator did not name the receiver; retry shortly` : noDirectPayment;
    const { body, headers: quoteHeaders } = buildPaymentRequired({
      resource: publicEndpoint(headers),
      description: config.description || config.service,
      amount: price,
      payTo: config.ownerWallet,
      network: config.x402Network,
      asset: config.asset,
      extra,
      escrow: escrowServed,
      ...(exactOffer ? { exact: exactOffer } : {}),
      ...(config.bazaar ? { extensions: { bazaar: config.bazaar } } : {}),
      ...(error !== undefined ? { error } : {}),
      ...(more.message !== undefined ? { message: more.message } : {}),
    });
    // MPP: a stellar/charge challenge for the same `exact` offer beside it (mpp-charge.ts).
    const challenge = await charges.challenge(exactOffer, new URL(publicEndpoint(headers)).host);
    const mpp: Record<string, string> = challenge ? { 'www-authenticate': challenge } : {};
    return respond(402, body, { ...quoteHeaders, ...mpp, ...(more.header ? { [X402_HEADERS.paymentResponseV2]: more.header } : {}) });
  }

  const priceOf = (payload: unknown) => pricePayload(priceFn, config.pricePerCall, payload);

  async function checkRegistration(): Promise<string | null> {
    if (!registry) return null;
    const t = now();
    if (registration && registration.until > t) return registration.error;
    let error: string | null = null;
    try {
      const agent = await registry.getAgent(config.service);
      if (!agent)
        error = `service "${config.service}" is not registered in the registry${config.contractId ? ` ${config.contractId}` : ''}; run provider.bootstrap()`;
      else if (agent.owner !== config.ownerWallet) {
        error = `the registry owner of "${config.service}" is ${agent.owner}, not this provider's wallet ${config.ownerWallet}`;
      }
    } catch (e) {
      error = `cannot confirm the registration of "${config.service}": registry unreachable at ${config.rpcUrl} (${e instanceof Error ? e.message : String(e)})${
        config.network === 'local' ? '; is the devnet running? (FAREBOX_DEVNET_URL)' : ''
      }`;
    }
    registration = { error, until: t + (error ? 10_000 : 300_000) };
    return error;
  }

  async function run(payload: unknown, context: CallContext): Promise<{ ok: true; response: ProviderResponse } | { ok: false; response: ProviderResponse }> {
    let result: unknown;
    try {
      result = await handler!(payload, context);
    } catch (e) {
      return { ok: false, response: fail(500, e instanceof Error && e.message ? e.message : 'the service handler failed') };
    }
    let text: string | undefined;
    try {
      text = JSON.stringify(result);
    } catch (e) {
      return { ok: false, response: fail(500, `the service handler returned a value that is not JSON-serialisable: ${(e as Error).message}`) };
    }
    const response = respond(200, text === undefined ? null : result);
    serialized.set(response, text ?? 'null');
    return { ok: true, response };
  }

  async function signedCall(header: string, raw: Uint8Array | undefined, body: unknown, request: PaidRequest): Promise<ProviderResponse> {
    if (!config.platformPublicKey) {
      return fail(401, 'platform-signed calls are not accepted by this service: no platform public key is configured (FAREBOX_PLATFORM_PUBLIC_KEY)');
    }
    if (!raw) {
      return fail(
        500,
        'the raw request body is needed to verify a platform-signed call: pass rawBody to handle(), or mount the express adapter before any body parser',
      );
    }
    const verdict = await verifyCallCertificate(header, {
      body: raw,
      service: config.service,
      platformPublicKey: config.platformPublicKey,
      now: Math.floor(now() / 1000),
    });
    if (!verdict.ok) return fail(401, verdict.message);
    const parsed = parsePayload(raw, body);
    if (!parsed.ok) return parsed.response;
    const price = await priceOf(parsed.payload);
    if (typeof price !== 'bigint') return price;
    const { certificate } = verdict;
    if (certificate.amount < price) {
      return quote(
        price,
        request.headers,
        `certificate amount ${formatAmount(certificate.amount, { trim: true })} USDC is below this payload's price ${formatAmount(price, { trim: true })} USDC`,
      );
    }
    const registrationError = await checkRegistration();
    if (registrationError) return fail(503, registrationError);
    let firstUse: boolean;
    try {
      firstUse = await replayStore.checkAndRemember(certificate.nonce, verdict.acceptableUntil);
    } catch (e) {
      return fail(503, `replay protection unavailable, call refused: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (!firstUse) return fail(401, 'certificate already used (replay)');
    const outcome = await run(parsed.payload, {
      paidWith: 'platform',
      amount: certificate.amount,
      price,
      callId: certificate.callId,
      ...(request.ip !== undefined ? { ip: request.ip } : {}),
    });
    return outcome.response;
  }

  async function escrowCall(value: string, version: 1 | 2, raw: Uint8Array | undefined, body: unknown, request: PaidRequest): Promise<ProviderResponse> {
    const parsed = parsePayload(raw, body);
    if (!parsed.ok) return parsed.response;
    const price = await priceOf(parsed.payload);
    if (typeof price !== 'bigint') return price;
    if (!config.escrow.enabled) return quote(price, request.headers, 'escrow payments are disabled for this service');
    let payment: EscrowPayment;
    try {
      payment = parsePaymentHeader(value);
    } catch (e) {
      return quote(price, request.headers, (e as Error).message);
    }
    if (payment.network && payment.network !== config.x402Network) {
      return quote(price, request.headers, `payment is for ${payment.network}, this service runs on ${config.x402Network}`);
    }
    if (!escrowVerifier) {
      return fail(
        503,
        "escrow payments cannot be verified by this provider: it has no escrowVerifier (the default one needs the owner's secret to release escrows: set AGENT_WALLET_SECRET or KEYPAIR_PATH, or pass escrowVerifier)",
      );
    }
    const registrationError = await checkRegistration();
    if (registrationError) return fail(503, registrationError);
    let claim;
    try {
      claim = await escrowVerifier.claim({ payment, service: config.service, payTo: config.ownerWallet, amount: price, network: config.x402Network });
    } catch (e) {
      return fail(500, `escrow verification failed: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (!claim.ok) return claim.status === 402 ? quote(price, request.headers, claim.message) : fail(claim.status, claim.message);
    const ref = { escrowId: claim.escrowId, service: config.service };
    const outcome = await run(parsed.payload, {
      paidWith: 'escrow',
      amount: claim.amount,
      price,
      escrowId: claim.escrowId,
      ...(request.ip !== undefined ? { ip: request.ip } : {}),
    });
    if (!outcome.ok) {
      await escrowVerifier.abandon({ ...ref, reason: String((outcome.response.body as { error?: unknown }).error) }).catch(() => undefined);
      return outcome.response;
    }
    let receipt;
    try {
      receipt = await escrowVerifier.release(ref);
    } catch {
      receipt = { success: false, transaction: claim.escrowId, network: config.x402Network, payer: claim.payer };
    }
    const headerName = version === 2 ? X402_HEADERS.paymentResponseV2 : X402_HEADERS.paymentResponse;
    outcome.response.headers[headerName] = encodePaymentResponse(receipt);
    return outcome.response;
  }

  async function paidRoute(request: PaidRequest): Promise<ProviderResponse> {
    if (degradedMessage) return fail(503, degradedMessage);
    if (!handler) return fail(503, 'this service has no handler yet: call provider.serve(handler)');
    if (noPayment) return fail(503, NO_PAYMENT_MESSAGE);
    const raw = typeof request.rawBody === 'string' ? utf8Encoder.encode(request.rawBody) : request.rawBody;
    if (raw && raw.length > config.bodyLimit) return fail(413, `request body too large (limit ${formatLimit(config.bodyLimit)})`);
    const certificate = readHeader(request.headers, CERTIFICATE_HEADER);
    if (certificate !== undefined) return signedCall(certificate, raw, request.body, request);
    const signature = readHeader(request.headers, X402_HEADERS.paymentSignature);
    const xPayment = signature === undefined ? readHeader(request.headers, X402_HEADERS.payment) : undefined;
    const authorization = readHeader(request.headers, 'authorization');
    const charge = authorization !== undefined && /^payment\s/i.test(authorization) ? authorization : undefined;
    const paid = signature ?? xPayment ?? charge;
    if (paid !== undefined && (paid === charge || paymentHeaderScheme(paid) === 'exact')) {
      const parsed = parsePayload(raw, request.body);
      if (!parsed.ok) return parsed.response;
      const price = await priceOf(parsed.payload);
      if (typeof price !== 'bigint') return price;
      const deps = { config, exact, quote, checkRegistration, run, resource: publicEndpoint(request.headers) };
      if (paid === charge) return chargeCall(deps, charges, charge, parsed.payload, price, request);
      return exactCall(deps, paid, signature === undefined, parsed.payload, price, request);
    }
    if (xPayment !== undefined) return escrowCall(xPayment, 1, raw, request.body, request);
    if (signature !== undefined) return escrowCall(signature, 2, raw, request.body, request);

    const wait = limiter.take(request.ip ?? 'unknown');
    if (wait > 0) return fail(429, `too many unpaid requests: retry in ${wait} s, or pay`, { 'retry-after': String(wait) });
    const parsed = parsePayload(raw, request.body);
    if (!parsed.ok) return parsed.response;
    const price = await priceOf(parsed.payload);
    if (typeof price !== 'bigint') return price;
    return quote(price, request.headers);
  }

  /** `registered`/`verified`: the registry names this wallet as the owner (an unregistered service is `degraded`, saying so). */
  async function health(): Promise<ProviderResponse> {
    const unregistered = degradedMessage ? null : await checkRegistration();
    const error = degradedMessage ?? (noPayment ? NO_PAYMENT_MESSAGE : undefined) ?? unregistered;
    const registered = !!registry && !degradedMessage && !unregistered;
    const body = { status: error ? 'degraded' : 'ok', service: config.service, network: config.network, registered, verified: registered };
    return respond(200, { ...body, ...(error ? { error } : {}) });
  }

  async function handle(request: PaidRequest): Promise<ProviderResponse> {
    try {
      const method = (request.method ?? 'POST').toUpperCase();
      const path = request.path === undefined ? undefined : request.path.length > 1 ? request.path.replace(/\/+$/, '') : request.path;
      if (method === 'GET' && path !== undefined) {
        if (manifestPaths.has(path)) return respond(200, manifest());
        if (healthPaths.has(path)) return await health();
      }
      if (path !== undefined && path !== config.endpointPath) return fail(404, 'not found');
      if (method !== 'POST') return fail(405, `method not allowed: POST the JSON payload to ${config.endpointPath}`, { allow: 'POST' });
      return await paidRoute(request);
    } catch (e) {
      return fail(500, e instanceof Error ? e.message : String(e));
    }
  }

  const provider: Provider = {
    config,
    serve(next) {
      if (typeof next !== 'function') throw new ConfigError(['serve() needs a handler function (payload, context) => result']);
      handler = next;
      return provider;
    },
    handle,
    express: () =>
      createExpressMiddleware({ handle, bodyLimit: config.bodyLimit, routes: { paid: config.endpointPath, get: [...manifestPaths, ...healthPaths] } }),
    async listen(port = 0, host) {
      const listening = await listenHttp({ handle, bodyLimit: config.bodyLimit }, port, host, () => servers.delete(listening));
      servers.add(listening);
      if (!config.endpoint && !listenUrl) listenUrl = `${listening.url}${config.endpointPath === '/' ? '/' : config.endpointPath}`;
      return listening;
    },
    manifest,
    async bootstrap(options = {}) {
      // On the local network the listening address is a usable endpoint; elsewhere it must be public.
      const endpoint = config.endpoint ?? (config.network === 'local' ? listenUrl : undefined);
      const problems: string[] = [];
      if (!endpoint) {
        problems.push(
          `endpoint (PUBLIC_ENDPOINT) required: it is stored on-chain at registration${config.network === 'local' ? ' (or call listen() first)' : ''}`,
        );
      }
      if (!config.contractId) problems.push('contractId (STELLAR_CONTRACT_ID) required: the registry to register in');
      if (!walletSecret) problems.push('a wallet secret (AGENT_WALLET_SECRET or KEYPAIR_PATH) is required to sign the registration');
      if (problems.length > 0) throw new ConfigError(problems);
      if (!isRegistryClient(registry)) {
        throw new ProviderError(
          'BOOTSTRAP_UNAVAILABLE',
          `bootstrap() registers "${config.service}" on-chain, but the registry option only reads (getAgent): omit it to use the chain, or pass createRegistryClient() from @farebox/stellar. Nothing was registered.`,
          { service: config.service, owner: config.ownerWallet },
        );
      }
      registration = undefined;
      try {
        const desired = { service: config.service, pricePerCall: config.pricePerCall, endpoint: endpoint!, description: config.description };
        const done = await bootstrapOnChain(stellar, registry, walletSecret!, desired);
        return options.account
          ? { ...done, linked: await linkOwnerToAccount(walletSecret!, options.account, config.platformUrl ?? localGateway(config.network)) }
          : done;
      } finally {
        registration = undefined;
      }
    },
    async close() {
      await Promise.all([...servers].map((s) => s.close()));
    },
  };
  return provider;
}
