import { type connections, type inputs, operations, type schemas, type Operation, type OperationId, type Operations, type webhooks } from '@farebox/contract';
import type { z } from 'zod';
import { ClientError, GatewayApiError } from './errors.js';

/** A request id (runtime-neutral: WebCrypto where there is one). */
const randomId = (): string => globalThis.crypto?.randomUUID?.() ?? `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;

// The answers are the contract's schemas (`@farebox/contract`): one definition
// for the gateway, its OpenAPI document and this client.
export type GatewayWalletStatus = z.output<typeof schemas.WalletStatus>;
export type GatewayBalance = z.output<typeof schemas.Balance>;
export type GatewayTopupResult = z.output<typeof schemas.TopupResult>;
export type GatewayAccount = z.output<typeof schemas.Account>;
export type GatewayWallet = z.output<typeof schemas.Wallet>;
export type GatewayService = z.output<typeof schemas.Service>;
export type GatewayRegisteredService = z.output<typeof schemas.RegisteredService>;
export type GatewayRemovedService = z.output<typeof schemas.RemovedService>;
export type GatewayServiceManifest = z.output<typeof schemas.ServiceManifest>;
/** How a service answered its paid calls: status, and calls, answered share and answer times per window. */
export type GatewayServiceHealth = z.output<typeof schemas.ServiceHealth>;
export type GatewayServiceHealthSeries = z.output<typeof schemas.ServiceHealthSeries>;
export type GatewayCallResult = z.output<typeof schemas.CallResult>;
export type GatewayTransaction = z.output<typeof schemas.Transaction>;
export type GatewayApiKey = z.output<typeof schemas.ApiKey>;
export type GatewayCreatedApiKey = z.output<typeof schemas.CreatedApiKey>;
/** A spending policy to set (`limit_usd` with `limit_period`, `allowed_services`, `max_call_usd`; null removes one). */
export type GatewaySpendingPolicyInput = z.input<typeof inputs.SpendingPolicyBody>;
/** What an API key may do: `spend` (call, search, read its own balance, transactions and policy) or `manage` (everything the owner may do). */
export type GatewayApiKeyKind = z.output<typeof schemas.ApiKeyKind>;
export type GatewayRevoked = z.output<typeof schemas.Revoked>;
/** An app authorized through OAuth: its spending policy and its confirmation threshold (`confirm_above_usd`, `confirm_below_left_percent`). */
export type GatewayOAuthConnection = z.output<typeof connections.OAuthConnection>;
/** A connection's changes: spending policy fields (null removes one) and threshold fields (`confirm_above_usd`: null or "" for never by price). */
export type GatewayOAuthConnectionUpdate = z.input<typeof connections.UpdateOAuthConnectionBody>;
export type GatewayPublisherActivation = z.output<typeof schemas.PublisherActivation>;
export type GatewayPublisherOverview = z.output<typeof schemas.PublisherOverview>;
export type GatewaySettlement = z.output<typeof schemas.Settlement>;
export type GatewaySettleResult = z.output<typeof schemas.SettleResult>;
export type GatewayAnalyticsPoint = z.output<typeof schemas.AnalyticsPoint>;
export type GatewayPlatformStats = z.output<typeof schemas.PlatformStats>;
export type GatewayPlatformKey = z.output<typeof schemas.PlatformKey>;
export type GatewayHealth = z.output<typeof schemas.Health>;
export type GatewayDispute = z.output<typeof schemas.Dispute>;
export type GatewayTreasury = z.output<typeof schemas.Treasury>;
export type GatewayReconciliation = z.output<typeof schemas.Reconciliation>;
export type GatewayOperatorSettlement = z.output<typeof schemas.OperatorSettlement>;
export type GatewaySettlementRetry = z.output<typeof schemas.SettlementRetry>;
export type GatewayRevenue = z.output<typeof schemas.Revenue>;
export type GatewayAuditEntry = z.output<typeof schemas.AuditEntry>;
/** A webhook endpoint (`secret_prefix`, never the secret); with `secret` in the answers that create or rotate it. */
export type GatewayWebhook = z.output<typeof webhooks.Webhook>;
export type GatewayCreatedWebhook = z.output<typeof webhooks.CreatedWebhook>;
/** One event sent to one endpoint, with every attempt (the delivery log). */
export type GatewayWebhookDelivery = z.output<typeof webhooks.WebhookDelivery>;
export type GatewayWebhookEventType = z.output<typeof webhooks.WebhookEventType>;

type Part<I, K extends string> = I extends { [P in K]: infer S extends z.ZodType } ? { [P in K]: z.input<S> } : { [P in K]?: undefined };

/** What one operation of the contract takes: its path parameters, query, headers and body (each when it has one). */
export type GatewayRequest<K extends OperationId> = Part<Operations[K]['input'], 'params'> &
  Part<Operations[K]['input'], 'query'> &
  Part<Operations[K]['input'], 'headers'> &
  Part<Operations[K]['input'], 'body'>;

/** What one operation of the contract answers (validated). */
export type GatewayResponse<K extends OperationId> = z.output<Operations[K]['output']>;

export interface GatewayClientOptions {
  /** The gateway's address, e.g. `https://farebox.example`. */
  baseUrl: string;
  /** An API key (`sk_live_...`). */
  apiKey?: string;
  /** An OAuth access token (used when no apiKey is given). */
  accessToken?: string;
  /**
   * The browser's session cookie instead of a bearer credential (the
   * dashboard): requests carry the cookie, and writes the CSRF token this
   * function returns (the readable `farebox_csrf` cookie) in `X-CSRF-Token`.
   */
  session?: { csrfToken(): string | undefined };
  fetch?: typeof fetch;
  /** Per-request timeout, ms (default 60 000). */
  timeoutMs?: number;
  /**
   * Paid calls (`call`): the longest wait, ms, for an earlier attempt under the
   * same `Idempotency-Key` that the gateway says is still in progress (a `409`
   * with `Retry-After`), waited once before asking again (default 20 000; 0:
   * never wait).
   */
  callRetryWaitMs?: number;
}

/** Options of one paid call (`GatewayClient.call`). */
export interface GatewayCallOptions {
  /**
   * The call's `Idempotency-Key` (1 to 255 characters; default: a random UUID
   * made for this call). A call sent again with the same key is charged at
   * most once and answers the first outcome.
   */
  idempotencyKey?: string;
  /** Refuse to pay more than this (USD): `Farebox-Max-Cost`. */
  maxCost?: number | string;
}

/** Registration of a service from the dashboard account (`POST /v1/agents`). */
export interface RegisterServiceInput extends UpdateServiceInput {
  service: string;
  endpoint: string;
  description: string;
}

/** The price as `price`, USDC in a decimal string ("0.002"), or `pricePerCallLamports`, base units (1 USDC = 10,000,000); over 100 USDC with `maxPrice`. */
export interface UpdateServiceInput {
  price?: string;
  pricePerCallLamports?: number | bigint;
  maxPrice?: string;
  endpoint?: string;
  description?: string;
}

/** An operator's decision on a dispute: the whole balance back to the funder, or a split in base units. */
export type DisputeDecision =
  | { action: 'refund' }
  | { action: 'split'; payer_base_units: number | string | bigint; receiver_base_units: number | string | bigint };

/**
 * A typed client of the gateway's REST API, built from the operation table of
 * `@farebox/contract`: every answer is validated against its operation's
 * schema; errors are {@link GatewayApiError}.
 */
export interface GatewayClient {
  /** Any operation of the contract by its id (the typed methods below are shorthands). */
  request<K extends OperationId>(id: K, input?: GatewayRequest<K>): Promise<GatewayResponse<K>>;
  me(): Promise<GatewayAccount>;
  balance(): Promise<GatewayBalance>;
  wallet(): Promise<GatewayWallet>;
  /**
   * Adds credits, `amount` in USD (0 < amount <= 1000): paid in USDC from the
   * account's wallet where `platform.key().topups` is `wallet` (the answer
   * comes once the network confirmed the payment), else free test credits.
   * Answers the new balance and the top-up. Pass an `idempotencyKey` and reuse
   * it when retrying: the top-up then happens once.
   */
  topup(amount: number, options?: { idempotencyKey?: string }): Promise<GatewayTopupResult>;
  /**
   * `POST /v1/call`, retry-safe: sent with an `Idempotency-Key` (the caller's
   * or a random UUID), asked again once with the same key when the connection
   * was lost before an answer (a reset, a closed socket; not a timeout, not an
   * HTTP error answer), and an earlier attempt still in progress (`409` with
   * `Retry-After`) is waited for once, up to `callRetryWaitMs`. So the answer
   * is the call's one outcome, charged at most once. Errors carry
   * `data.idempotencyKey` and, once the gateway gave the call an id,
   * `data.callId`.
   */
  call(service: string, payload: Record<string, unknown>, options?: GatewayCallOptions): Promise<GatewayCallResult>;
  transactions(options?: { limit?: number }): Promise<GatewayTransaction[]>;
  agents: {
    /** The whole catalog, or its first `limit` services. */
    list(options?: { limit?: number }): Promise<GatewayService[]>;
    /** Hybrid search, best first: 50 hits, or `limit`. */
    search(query: string, options?: { limit?: number }): Promise<GatewayService[]>;
    /** What the service's own `/manifest` says about its price. */
    manifest(service: string): Promise<GatewayServiceManifest>;
    /** One service, with its health. */
    get(service: string): Promise<GatewayService>;
    /** Its calls, answered share and answer times per hour over 24 hours (default) or per 6 hours over 7 days. */
    health(service: string, options?: { window?: '24h' | '7d' }): Promise<GatewayServiceHealthSeries>;
    mine(): Promise<GatewayService[]>;
    register(input: RegisterServiceInput): Promise<GatewayRegisteredService>;
    update(service: string, changes: UpdateServiceInput): Promise<GatewayRegisteredService>;
    remove(service: string): Promise<GatewayRemovedService>;
  };
  apiKeys: {
    list(): Promise<GatewayApiKey[]>;
    /**
     * The plain key is in the answer once. `policy`: its spending policy (docs/api.md, "Spending policies") and
     * its `kind`: `spend` (call, search, read its own) or `manage` (default without a policy; a key with one is a spend key).
     */
    create(name: string, policy?: GatewaySpendingPolicyInput & { kind?: GatewayApiKeyKind }): Promise<GatewayCreatedApiKey>;
    /** Renames the key or changes its policy (absent fields kept, null removes one); its next call follows it. */
    update(id: string, changes: GatewaySpendingPolicyInput & { name?: string }): Promise<GatewayApiKey>;
    revoke(id: string): Promise<GatewayRevoked>;
  };
  oauthConnections: {
    list(): Promise<GatewayOAuthConnection[]>;
    /** Changes the connection's spending policy and/or the threshold above which its calls ask the user (absent fields kept). */
    update(id: string, changes: GatewayOAuthConnectionUpdate): Promise<GatewayOAuthConnection>;
    revoke(id: string): Promise<GatewayRevoked>;
  };
  /** Signed webhooks (docs/webhooks.md): the session or a manage key only. */
  webhooks: {
    list(options?: { limit?: number }): Promise<GatewayWebhook[]>;
    /** Registers an endpoint; the answer's `secret` is shown this once. */
    create(url: string, events: GatewayWebhookEventType[]): Promise<GatewayCreatedWebhook>;
    remove(id: string): Promise<{ id: string; deleted: true }>;
    /** A new secret (in the answer once); the previous one keeps signing for `expirePreviousInHours` (default 0: it stops now). */
    rotateSecret(id: string, options?: { expirePreviousInHours?: number }): Promise<GatewayCreatedWebhook>;
    /** Sends a `webhook.ping` event to the endpoint. */
    ping(id: string): Promise<GatewayWebhookDelivery>;
    deliveries(id: string, options?: { limit?: number }): Promise<GatewayWebhookDelivery[]>;
    redeliver(id: string, deliveryId: string): Promise<GatewayWebhookDelivery>;
  };
  publisher: {
    activate(name: string): Promise<GatewayPublisherActivation>;
    overview(): Promise<GatewayPublisherOverview>;
    settlements(options?: { limit?: number }): Promise<GatewaySettlement[]>;
    analytics(options?: { days?: number }): Promise<GatewayAnalyticsPoint[]>;
    /** Closes the current settlement cycles now (the account wallet's and each linked owner key's). */
    settle(): Promise<GatewaySettleResult>;
    /** Links a service owner key (a provider-SDK service's `.farebox/keypair`): a challenge, signed by the key, posted back. */
    linkChallenge(owner: string): Promise<GatewayResponse<'publisherLinkChallenge'>>;
    link(signed: { owner: string; challenge: string; signature: string }): Promise<GatewayResponse<'linkPublisherOwner'>>;
    /** Any owner key's services, calls, gross, fee, net and payouts (no credential needed). */
    byOwner(owner: string): Promise<GatewayResponse<'publisherByOwner'>>;
  };
  platform: {
    stats(): Promise<GatewayPlatformStats>;
    /** The platform's public key, network and treasury (no credential needed). */
    key(): Promise<GatewayPlatformKey>;
  };
  /** Disputes on direct escrows (no credential: the funder's signed proof is one). */
  disputes: {
    open(input: { escrowId: string; proof: string; reason?: string }): Promise<GatewayDispute>;
    status(escrowId: string): Promise<GatewayDispute>;
  };
  /** The operator API (operator accounts only; `whoami` answers for any account). */
  operator: {
    whoami(): Promise<{ operator: boolean; email: string }>;
    disputes(options?: { state?: 'open' | 'resolved' | 'all'; limit?: number }): Promise<GatewayDispute[]>;
    resolveDispute(escrowId: string, decision: DisputeDecision): Promise<GatewayDispute>;
    treasury(): Promise<GatewayTreasury>;
    settlements(options?: { state?: string; limit?: number }): Promise<GatewayOperatorSettlement[]>;
    retrySettlement(id: string): Promise<GatewaySettlementRetry>;
    revenue(options?: { days?: number }): Promise<GatewayRevenue>;
    audit(options?: { limit?: number }): Promise<GatewayAuditEntry[]>;
    /** Every wallet-backed credit against the chain, the ledger audit, and the treasury against what it owes. */
    reconciliation(): Promise<GatewayReconciliation>;
  };
  /** `GET /health` (no credential needed). */
  health(): Promise<GatewayHealth>;
}

function jsonInteger(value: number | bigint, name: string): number {
  const n = typeof value === 'bigint' ? Number(value) : value;
  if (!Number.isSafeInteger(n) || n < 0 || (typeof value === 'bigint' && BigInt(n) !== value)) {
    throw new ClientError('CONFIG', `${name} must be a non-negative integer of base units`);
  }
  return n;
}

const int = (n: number | undefined): string | undefined => (n === undefined ? undefined : String(n));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** No answer (or half of one): `data.requestId` is the id this request was sent with, in the gateway's log lines if it got there. */
function networkError(label: string, e: unknown, requestId: string | undefined): ClientError {
  const timedOut = e instanceof Error && (e.name === 'TimeoutError' || e.name === 'AbortError');
  const data = { ...(timedOut ? { timedOut: true } : {}), ...(requestId ? { requestId } : {}) };
  return new ClientError('NETWORK', `${label} failed: ${e instanceof Error ? e.message : String(e)}`, data, { cause: e });
}

/** `Retry-After` in seconds (delta-seconds or an HTTP date), undefined when absent or unreadable. */
function retryAfterOf(value: string | null): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

/**
 * A paid call that a lost connection cannot make ambiguous: one
 * `Idempotency-Key` for every attempt of this logical call; one more attempt
 * after a connection lost before any answer; one wait (at most `maxWaitMs`)
 * for an attempt the gateway says is still in progress under that key.
 * Whatever is thrown carries the key (`data.idempotencyKey`).
 */
async function retrySafeCall(
  request: <K extends OperationId>(id: K, input?: GatewayRequest<K>) => Promise<GatewayResponse<K>>,
  service: string,
  payload: Record<string, unknown>,
  opts: GatewayCallOptions,
  maxWaitMs: number,
): Promise<GatewayCallResult> {
  const key = opts.idempotencyKey ?? randomId();
  if (typeof key !== 'string' || key.length === 0 || key.length > 255) throw new ClientError('CONFIG', 'idempotencyKey must be 1 to 255 characters');
  const headers = { 'idempotency-key': key, 'farebox-max-cost': opts.maxCost === undefined ? undefined : String(opts.maxCost) };
  let resent = false;
  let waited = false;
  for (;;) {
    try {
      return await request('call', { body: { service, payload }, headers });
    } catch (e) {
      if (!(e instanceof ClientError)) throw e;
      const lost = e.code === 'NETWORK' && e.data.timedOut !== true;
      if (lost && !resent) {
        resent = true;
        continue;
      }
      const inProgress = e instanceof GatewayApiError && e.status === 409 && e.retryAfterSeconds !== undefined && /in progress/.test(e.message);
      if (inProgress && !waited && maxWaitMs > 0) {
        waited = true;
        await sleep(Math.min(e.retryAfterSeconds! * 1000, maxWaitMs));
        continue;
      }
      e.data.idempotencyKey = key;
      throw e;
    }
  }
}

/**
 * Creates a typed client of the gateway REST API, for scripts, servers and
 * the browser.
 *
 * @example
 * const gw = createGatewayClient({ baseUrl: 'https://farebox.example', apiKey: process.env.FAREBOX_API_KEY });
 * const { result, cost } = await gw.call('echo', { text: 'hi' }, { maxCost: 0.01 });
 */
export function createGatewayClient(options: GatewayClientOptions): GatewayClient {
  const problems: string[] = [];
  let base = '';
  try {
    const url = new URL(options.baseUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') problems.push('baseUrl must be an http(s) URL');
    base = options.baseUrl.replace(/\/+$/, '');
  } catch {
    problems.push(`baseUrl is not a valid URL: ${JSON.stringify(options.baseUrl)}`);
  }
  const credential = options.apiKey ?? options.accessToken;
  if (credential !== undefined && (typeof credential !== 'string' || credential.trim() === '' || /\s/.test(credential))) {
    problems.push('apiKey / accessToken must be a non-empty string without spaces');
  }
  const timeoutMs = options.timeoutMs ?? 60_000;
  const callRetryWaitMs = options.callRetryWaitMs ?? 20_000;
  if (!Number.isFinite(callRetryWaitMs) || callRetryWaitMs < 0) problems.push('callRetryWaitMs must be a number of ms >= 0');
  if (problems.length > 0) throw new ClientError('CONFIG', `createGatewayClient: ${problems.join('; ')}`);
  const doFetch = options.fetch ?? globalThis.fetch;
  const session = credential === undefined ? options.session : undefined;

  async function request<K extends OperationId>(id: K, input: GatewayRequest<K> = {} as GatewayRequest<K>): Promise<GatewayResponse<K>> {
    const op: Operation = operations[id];
    const parts = input as {
      params?: Record<string, string>;
      query?: Record<string, string | undefined>;
      headers?: Record<string, string | undefined>;
      body?: unknown;
    };
    const path = op.path.replace(/:([A-Za-z_]\w*)/g, (_, name: string) => encodeURIComponent(String(parts.params?.[name] ?? '')));
    const label = `${op.method} ${path}`;
    if (op.auth.kind !== 'none' && !credential && !session) throw new ClientError('CONFIG', `${label} needs a credential: pass apiKey or accessToken`);
    const url = new URL(`${base}${path}`);
    for (const [k, v] of Object.entries(parts.query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
    // Every request has an id of its own; the gateway echoes it and logs it as `reqId`.
    const headers: Record<string, string> = { accept: 'application/json', 'x-request-id': randomId() };
    for (const [k, v] of Object.entries(parts.headers ?? {})) if (v !== undefined) headers[k] = v;
    if (credential) headers.authorization = `Bearer ${credential}`;
    if (session && op.method !== 'GET') {
      const csrf = session.csrfToken();
      if (csrf) headers['x-csrf-token'] = csrf;
    }
    const body = parts.body ?? (op.method === 'POST' && op.input.body === undefined ? {} : undefined);
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await doFetch(url, {
        method: op.method,
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        ...(session ? { credentials: 'same-origin' as const } : {}),
        signal: AbortSignal.timeout(timeoutMs),
        redirect: 'error',
      });
    } catch (e) {
      throw networkError(label, e, headers['x-request-id']);
    }
    let text: string;
    try {
      text = await res.text();
    } catch (e) {
      // The connection was lost (or timed out) in the middle of the answer.
      throw networkError(label, e, headers['x-request-id']);
    }
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (!res.ok) {
      // `{ error, code, ... }`; an older gateway's `{ error }` keeps its message too (the answer's code is then `HTTP_<status>`).
      const said = (json as { error?: unknown } | undefined)?.error;
      throw new GatewayApiError(
        res.status,
        typeof said === 'string' ? said : `HTTP ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}`,
        json,
        res.headers.get('x-request-id') ?? headers['x-request-id'],
        retryAfterOf(res.headers.get('retry-after')),
      );
    }
    const parsed = op.output.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ClientError('BAD_RESPONSE', `${label} answered an unexpected body${issue ? ` (${issue.path.join('.') || 'body'}: ${issue.message})` : ''}`, {
        status: res.status,
      });
    }
    return parsed.data as GatewayResponse<K>;
  }

  const price = <T extends { pricePerCallLamports?: number | bigint }>(input: T) =>
    input.pricePerCallLamports === undefined ? input : { ...input, pricePerCallLamports: jsonInteger(input.pricePerCallLamports, 'pricePerCallLamports') };

  return {
    request,
    me: () => request('me'),
    balance: () => request('balance'),
    wallet: () => request('wallet'),
    topup: (amount, opts = {}) => request('topup', { body: { amount }, headers: { 'idempotency-key': opts.idempotencyKey } }),
    call: (service, payload, opts = {}) => retrySafeCall(request, service, payload, opts, callRetryWaitMs),
    transactions: (opts = {}) => request('transactions', { query: { limit: int(opts.limit) } }),
    agents: {
      list: (opts = {}) => request('listAgents', { query: { limit: int(opts.limit) } }),
      search: (q, opts = {}) => request('listAgents', { query: { q, limit: int(opts.limit) } }),
      manifest: (service) => request('agentManifest', { params: { service } }),
      get: (service) => request('getAgent', { params: { service } }),
      health: (service, opts = {}) => request('agentHealth', { params: { service }, query: { window: opts.window } }),
      mine: () => request('myAgents'),
      register: (input) => request('registerAgent', { body: price(input) as z.input<typeof inputs.RegisterServiceBody> }),
      update: (service, changes) => request('updateAgent', { params: { service }, body: price(changes) as z.input<typeof inputs.UpdateServiceBody> }),
      remove: (service) => request('removeAgent', { params: { service } }),
    },
    apiKeys: {
      list: () => request('listApiKeys'),
      create: (name, policy = {}) => request('createApiKey', { body: { name, ...policy } }),
      update: (id, changes) => request('updateApiKey', { params: { id }, body: changes }),
      revoke: (id) => request('revokeApiKey', { params: { id } }),
    },
    oauthConnections: {
      list: () => request('listOAuthConnections'),
      update: (id, changes) => request('updateOAuthConnection', { params: { id }, body: changes }),
      revoke: (id) => request('revokeOAuthConnection', { params: { id } }),
    },
    webhooks: {
      list: (opts = {}) => request('listWebhooks', { query: { limit: int(opts.limit) } }),
      create: (url, events) => request('createWebhook', { body: { url, events } }),
      remove: (id) => request('deleteWebhook', { params: { id } }),
      rotateSecret: (id, opts = {}) =>
        request('rotateWebhookSecret', {
          params: { id },
          body: opts.expirePreviousInHours === undefined ? {} : { expire_previous_in_hours: opts.expirePreviousInHours },
        }),
      ping: (id) => request('pingWebhook', { params: { id } }),
      deliveries: (id, opts = {}) => request('listWebhookDeliveries', { params: { id }, query: { limit: int(opts.limit) } }),
      redeliver: (id, delivery) => request('redeliverWebhook', { params: { id, delivery } }),
    },
    publisher: {
      activate: (name) => request('activatePublisher', { body: { name } }),
      overview: () => request('publisherOverview'),
      settlements: (opts = {}) => request('publisherSettlements', { query: { limit: int(opts.limit) } }),
      analytics: (opts = {}) => request('publisherAnalytics', { query: { days: int(opts.days) } }),
      settle: () => request('publisherSettle'),
      linkChallenge: (owner) => request('publisherLinkChallenge', { body: { owner } }),
      link: (signed) => request('linkPublisherOwner', { body: signed }),
      byOwner: (owner) => request('publisherByOwner', { params: { owner } }),
    },
    platform: {
      stats: () => request('platformStats'),
      key: () => request('platformKey'),
    },
    disputes: {
      open: (input) => request('openDispute', { body: input }),
      status: (escrowId) => request('disputeStatus', { params: { escrowId } }),
    },
    operator: {
      whoami: () => request('operatorWhoami'),
      disputes: (opts = {}) => request('operatorDisputes', { query: { state: opts.state, limit: int(opts.limit) } }),
      resolveDispute: (escrowId, decision) =>
        request('operatorResolveDispute', {
          params: { escrowId },
          body:
            decision.action === 'refund'
              ? { action: 'refund' }
              : { action: 'split', payer_base_units: String(decision.payer_base_units), receiver_base_units: String(decision.receiver_base_units) },
        }),
      treasury: () => request('operatorTreasury'),
      settlements: (opts = {}) => request('operatorSettlements', { query: { state: opts.state, limit: int(opts.limit) } }),
      retrySettlement: (id) => request('operatorRetrySettlement', { params: { id } }),
      revenue: (opts = {}) => request('operatorRevenue', { query: { days: int(opts.days) } }),
      audit: (opts = {}) => request('operatorAudit', { query: { limit: int(opts.limit) } }),
      reconciliation: () => request('operatorReconciliation'),
    },
    health: () => request('health'),
  };
}
