import { z } from 'zod';
import { ClientError, GatewayApiError } from './errors.js';

/** Base-unit integers as the gateway sends them (JSON numbers within 2^53). */
const units = z.number().int();

/** A request id (runtime-neutral: WebCrypto where there is one). */
const randomId = (): string => globalThis.crypto?.randomUUID?.() ?? `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;

/**
 * The wallet's state: `ok`; `provisioning` while a new account's wallet is
 * still being created on chain (account, USDC trustline), when USDC sent to
 * it would fail; `unavailable` when the settlement network did not answer.
 */
const WalletStatusSchema = z.enum(['ok', 'provisioning', 'unavailable']);

const BalanceSchema = z.looseObject({
  asset: z.string(),
  base_unit_name: z.string(),
  balance_base_units: units,
  balance_usd: z.number(),
  wallet_base_units: units,
  wallet_usd: z.number(),
  total_base_units: units,
  total_usd: z.number(),
  /** `provisioning` while the wallet is still being created on chain (USDC sent to it now would fail). */
  wallet_status: WalletStatusSchema.optional(),
});

const TopupResultSchema = BalanceSchema.extend({
  /** The top-up (a Transaction item): `paid_with: 'wallet'` with the on-chain payment, or `null` for free test credits. */
  topup: z.looseObject({
    id: z.string(),
    type: z.literal('topup'),
    amount_base_units: units,
    amount_usd: z.number(),
    tx_signature: z.string().nullable(),
    explorer_url: z.string().nullable(),
    status: z.enum(['completed', 'pending', 'failed']),
    paid_with: z.literal('wallet').nullable(),
    note: z.string().nullable(),
    created_at: z.string(),
  }),
});

const MeSchema = BalanceSchema.extend({
  id: z.string(),
  email: z.string(),
  custodial_wallet: z.string(),
  is_publisher: z.boolean(),
  publisher_name: z.string().nullable().optional(),
  created_at: z.string(),
});

const WalletSchema = z.looseObject({
  pubkey: z.string(),
  asset: z.string(),
  base_units: units,
  asset_amount: z.number(),
  master_wallet: z.string(),
  asset_issuer: z.string().optional(),
  explorer_url: z.string().optional(),
  status: WalletStatusSchema.optional(),
});

const ServiceSchema = z.looseObject({
  service: z.string(),
  pricePerCall: z.number(),
  description: z.string(),
  endpoint: z.string(),
  ownerWallet: z.string(),
  acceptedToken: z.string(),
  totalCalls: z.number(),
  totalEarned: z.number(),
  createdAt: z.number(),
  source: z.string(),
  score: z.number().optional(),
});

const RegisteredServiceSchema = ServiceSchema.extend({ txHash: z.string().optional(), explorerUrl: z.string().optional() });

const CostSchema = z.looseObject({ lamports: units, usd: z.number() });

const CallResultSchema = z.looseObject({
  result: z.unknown(),
  cost: CostSchema,
  paidWith: z.string(),
  mode: z.string(),
  newBalance: CostSchema,
  explorerUrl: z.string().optional(),
  callId: z.string().optional(),
  trace: z.looseObject({ steps: z.array(z.unknown()) }),
});

const TransactionSchema = z.looseObject({
  id: z.string().optional(),
  type: z.string(),
  amount_lamports: units,
  amount_base_units: units.optional(),
  amount_usd: z.number().optional(),
  service: z.string().nullable().optional(),
  /** A paid top-up's payment (also while `pending`: the submitted hash). */
  tx_signature: z.string().nullable().optional(),
  explorer_url: z.string().nullable().optional(),
  /** `completed`, `pending` (a top-up on its way, a call held), `failed` (the reason in `note`), `refunded`. */
  status: z.string(),
  /** `wallet` for a top-up paid from the wallet (and calls paid from it), `credit` for calls paid with credits. */
  paid_with: z.string().nullable().optional(),
  /** `signup`, `free...` for free top-ups, a failed payment's reason. */
  note: z.string().nullable().optional(),
  created_at: z.string(),
});

const ApiKeySchema = z.looseObject({ id: z.string(), name: z.string(), prefix: z.string().optional(), created_at: z.string().optional() });
const CreatedApiKeySchema = ApiKeySchema.extend({ key: z.string().startsWith('sk_live_') });
const RevokedSchema = z.looseObject({ id: z.string(), revoked: z.boolean() });
const ConnectionSchema = z.looseObject({ id: z.string() });

const ActivatedSchema = z.looseObject({ is_publisher: z.literal(true), publisher_name: z.string(), wallet_status: WalletStatusSchema.optional() });
const OverviewSchema = z.looseObject({ calls: z.number(), services: z.array(ServiceSchema), payout_wallet: z.string().optional(), wallet_status: WalletStatusSchema.optional() });
const SettlementSchema = z.looseObject({ id: z.string(), fee: z.looseObject({ pct: z.number() }) });
const AnalyticsPointSchema = z.looseObject({ day: z.string(), calls: z.number(), earned_base_units: units, earned_asset: z.number(), earned_usd: z.number() });
const RemovedSchema = z.looseObject({ service: z.string(), removed: z.boolean() });
const StatsSchema = z.looseObject({});
const PlatformKeySchema = z.looseObject({
  publicKey: z.string(),
  network: z.string(),
  treasury: z.string(),
  /** `wallet`: top-ups are paid in USDC from the account's wallet; `free`: unpaid test credits. */
  topups: z.enum(['wallet', 'free']).optional(),
});
const HealthSchema = z.looseObject({ ok: z.boolean(), service: z.string() });
const ErrorSchema = z.looseObject({ error: z.string() });

export type GatewayWalletStatus = z.infer<typeof WalletStatusSchema>;
export type GatewayBalance = z.infer<typeof BalanceSchema>;
export type GatewayTopupResult = z.infer<typeof TopupResultSchema>;
export type GatewayAccount = z.infer<typeof MeSchema>;
export type GatewayWallet = z.infer<typeof WalletSchema>;
export type GatewayService = z.infer<typeof ServiceSchema>;
export type GatewayRegisteredService = z.infer<typeof RegisteredServiceSchema>;
export type GatewayCallResult = z.infer<typeof CallResultSchema>;
export type GatewayTransaction = z.infer<typeof TransactionSchema>;
export type GatewayApiKey = z.infer<typeof ApiKeySchema>;
export type GatewayCreatedApiKey = z.infer<typeof CreatedApiKeySchema>;
export type GatewayOAuthConnection = z.infer<typeof ConnectionSchema>;
export type GatewayPublisherOverview = z.infer<typeof OverviewSchema>;
export type GatewaySettlement = z.infer<typeof SettlementSchema>;
export type GatewayAnalyticsPoint = z.infer<typeof AnalyticsPointSchema>;
export type GatewayPlatformKey = z.infer<typeof PlatformKeySchema>;
export type GatewayHealth = z.infer<typeof HealthSchema>;

export interface GatewayClientOptions {
  /** The gateway's address, e.g. `https://farebox.example`. */
  baseUrl: string;
  /** An API key (`sk_live_...`). */
  apiKey?: string;
  /** An OAuth access token (used when no apiKey is given). */
  accessToken?: string;
  fetch?: typeof fetch;
  /** Per-request timeout, ms (default 60 000). */
  timeoutMs?: number;
}

/** Registration of a service from the dashboard account (`POST /v1/agents`). */
export interface RegisterServiceInput {
  service: string;
  /** Base units (1 USDC = 10,000,000). */
  pricePerCallLamports: number | bigint;
  endpoint: string;
  description: string;
}

export interface UpdateServiceInput {
  pricePerCallLamports?: number | bigint;
  endpoint?: string;
  description?: string;
}

/** A typed client of the gateway's `/v1` REST API. Every answer is validated; errors are {@link GatewayApiError}. */
export interface GatewayClient {
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
  call(service: string, payload: Record<string, unknown>, options?: { idempotencyKey?: string; maxCost?: number | string }): Promise<GatewayCallResult>;
  transactions(options?: { limit?: number }): Promise<GatewayTransaction[]>;
  agents: {
    list(): Promise<GatewayService[]>;
    search(query: string): Promise<GatewayService[]>;
    mine(): Promise<GatewayService[]>;
    register(input: RegisterServiceInput): Promise<GatewayRegisteredService>;
    update(service: string, changes: UpdateServiceInput): Promise<GatewayRegisteredService>;
    remove(service: string): Promise<{ service: string; removed: boolean; [k: string]: unknown }>;
  };
  apiKeys: {
    list(): Promise<GatewayApiKey[]>;
    /** The plain key is in the answer once. */
    create(name: string): Promise<GatewayCreatedApiKey>;
    revoke(id: string): Promise<{ id: string; revoked: boolean; [k: string]: unknown }>;
  };
  oauthConnections: {
    list(): Promise<GatewayOAuthConnection[]>;
    revoke(id: string): Promise<unknown>;
  };
  publisher: {
    activate(name: string): Promise<{ is_publisher: true; publisher_name: string; wallet_status?: GatewayWalletStatus; [k: string]: unknown }>;
    overview(): Promise<GatewayPublisherOverview>;
    settlements(options?: { limit?: number }): Promise<GatewaySettlement[]>;
    analytics(options?: { days?: number }): Promise<GatewayAnalyticsPoint[]>;
    /** Closes the current settlement cycle now. */
    settle(): Promise<unknown>;
  };
  platform: {
    stats(): Promise<Record<string, unknown>>;
    /** The platform's public key, network and treasury (no credential needed). */
    key(): Promise<GatewayPlatformKey>;
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

/**
 * Creates a typed client of the gateway REST API, for scripts and servers.
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
  if (problems.length > 0) throw new ClientError('CONFIG', `createGatewayClient: ${problems.join('; ')}`);
  const doFetch = options.fetch ?? globalThis.fetch;

  async function send<S extends z.ZodType>(
    schema: S,
    method: string,
    path: string,
    init: { body?: unknown; query?: Record<string, string | number | undefined>; headers?: Record<string, string>; open?: boolean } = {},
  ): Promise<z.infer<S>> {
    if (!init.open && !credential) throw new ClientError('CONFIG', `${method} ${path} needs a credential: pass apiKey or accessToken`);
    const url = new URL(`${base}${path}`);
    for (const [k, v] of Object.entries(init.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    // Every request has an id of its own; the gateway echoes it and logs it as `reqId`.
    const headers: Record<string, string> = { accept: 'application/json', 'x-request-id': randomId(), ...init.headers };
    if (credential) headers.authorization = `Bearer ${credential}`;
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await doFetch(url, {
        method,
        headers,
        ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
        signal: AbortSignal.timeout(timeoutMs),
        redirect: 'error',
      });
    } catch (e) {
      throw new ClientError('NETWORK', `${method} ${path} failed: ${e instanceof Error ? e.message : String(e)}`);
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (!res.ok) {
      const err = ErrorSchema.safeParse(json);
      throw new GatewayApiError(res.status, err.success ? err.data.error : `HTTP ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}`, json, res.headers.get('x-request-id') ?? headers['x-request-id']);
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ClientError('BAD_RESPONSE', `${method} ${path} answered an unexpected body${issue ? ` (${issue.path.join('.') || 'body'}: ${issue.message})` : ''}`, {
        status: res.status,
      });
    }
    return parsed.data;
  }

  const enc = encodeURIComponent;

  return {
    me: () => send(MeSchema, 'GET', '/v1/me'),
    balance: () => send(BalanceSchema, 'GET', '/v1/balance'),
    wallet: () => send(WalletSchema, 'GET', '/v1/wallet'),
    topup: (amount, opts = {}) =>
      send(TopupResultSchema, 'POST', '/v1/topup', { body: { amount }, ...(opts.idempotencyKey ? { headers: { 'idempotency-key': opts.idempotencyKey } } : {}) }),
    call: (service, payload, opts = {}) => {
      const headers: Record<string, string> = {};
      if (opts.idempotencyKey) headers['idempotency-key'] = opts.idempotencyKey;
      if (opts.maxCost !== undefined) headers['farebox-max-cost'] = String(opts.maxCost);
      return send(CallResultSchema, 'POST', '/v1/call', { body: { service, payload }, headers });
    },
    transactions: (opts = {}) => send(z.array(TransactionSchema), 'GET', '/v1/transactions', { query: { limit: opts.limit } }),
    agents: {
      list: () => send(z.array(ServiceSchema), 'GET', '/v1/agents'),
      search: (query) => send(z.array(ServiceSchema), 'GET', '/v1/agents', { query: { q: query } }),
      mine: () => send(z.array(ServiceSchema), 'GET', '/v1/agents/mine'),
      register: (input) =>
        send(RegisteredServiceSchema, 'POST', '/v1/agents', {
          body: { ...input, pricePerCallLamports: jsonInteger(input.pricePerCallLamports, 'pricePerCallLamports') },
        }),
      update: (service, changes) =>
        send(RegisteredServiceSchema, 'PUT', `/v1/agents/${enc(service)}`, {
          body: {
            ...changes,
            ...(changes.pricePerCallLamports !== undefined ? { pricePerCallLamports: jsonInteger(changes.pricePerCallLamports, 'pricePerCallLamports') } : {}),
          },
        }),
      remove: (service) => send(RemovedSchema, 'DELETE', `/v1/agents/${enc(service)}`),
    },
    apiKeys: {
      list: () => send(z.array(ApiKeySchema), 'GET', '/v1/api-keys'),
      create: (name) => send(CreatedApiKeySchema, 'POST', '/v1/api-keys', { body: { name } }),
      revoke: (id) => send(RevokedSchema, 'DELETE', `/v1/api-keys/${enc(id)}`),
    },
    oauthConnections: {
      list: () => send(z.array(ConnectionSchema), 'GET', '/v1/oauth/connections'),
      revoke: (id) => send(z.unknown(), 'DELETE', `/v1/oauth/connections/${enc(id)}`),
    },
    publisher: {
      activate: (name) => send(ActivatedSchema, 'POST', '/v1/publisher/activate', { body: { name } }),
      overview: () => send(OverviewSchema, 'GET', '/v1/publisher/overview'),
      settlements: (opts = {}) => send(z.array(SettlementSchema), 'GET', '/v1/publisher/settlements', { query: { limit: opts.limit } }),
      analytics: (opts = {}) => send(z.array(AnalyticsPointSchema), 'GET', '/v1/publisher/analytics', { query: { days: opts.days } }),
      settle: () => send(z.unknown(), 'POST', '/v1/publisher/settle', { body: {} }),
    },
    platform: {
      stats: () => send(StatsSchema, 'GET', '/v1/platform/stats'),
      key: () => send(PlatformKeySchema, 'GET', '/v1/platform/key', { open: true }),
    },
    health: () => send(HealthSchema, 'GET', '/health', { open: true }),
  };
}
