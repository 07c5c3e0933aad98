import { z } from 'zod';
import { Address, amountFields, BaseUnits, Timestamp } from './schema-parts.js';
import { ServiceHealth } from './health-schemas.js';
import { RefusalFields, SpendingPolicy } from './spending.js';

export { SpendingPolicy, SpendingRefusal } from './spending.js';

/**
 * The resources of the gateway's REST API, as JSON. One schema per shape: a
 * response field is added or changed here, and the gateway, its OpenAPI
 * document and the typed client follow. Objects list every field the gateway
 * sends (the contract test refuses an undocumented one); parsing strips
 * fields a newer gateway adds.
 */

export { BaseUnits };

/**
 * Every error answer: `error` (the spec's message) and `code`, plus the
 * refusal's details. The same fields reach a program on every surface: the
 * REST body, `/mcp`'s `_meta["farebox/error"]`, the stdio adapter's tool
 * error, the CLI's `--json` and `@farebox/client`'s `GatewayApiError.answer`.
 */
export const ErrorBody = z
  .looseObject({
    error: z.string(),
    code: z.string().meta({
      description:
        "What went wrong, for programs to branch on: the error table's code (`BAD_REQUEST`, `UNAUTHENTICATED`, `FORBIDDEN`, `NOT_FOUND`, `CONFLICT`, `INSUFFICIENT_BALANCE`, `SPENDING_LIMIT`, `PAYLOAD_TOO_LARGE`, `UNSUPPORTED_MEDIA_TYPE`, `RATE_LIMITED`, `UPSTREAM`, `UNAVAILABLE`, `INTERNAL`) or a refusal's own (`CREDENTIAL_KIND`, `CONFIRMATION_REQUIRED`).",
    }),
    callId: z.string().optional().meta({ description: 'The call this answer is about, once it had its id.' }),
    retryAfterSeconds: z.number().int().optional().meta({ description: 'When to ask again (the `Retry-After` header, in seconds).' }),
  })
  .meta({ id: 'Error', description: 'Every error answer: `{ "error": message, "code": code }` with the refusal\'s details.' });

/** The one shape of a failure on every surface (see {@link ErrorBody}). */
export interface ErrorAnswer {
  error: string;
  code: string;
  [field: string]: unknown;
}

/**
 * `ok`; `provisioning` while a new account's wallet is still being created on
 * chain (account, USDC trustline), when USDC sent to it would fail;
 * `unavailable` when the settlement network did not answer (wallet figures 0).
 */
export const WalletStatus = z.enum(['ok', 'provisioning', 'unavailable']).meta({ id: 'WalletStatus' });

export const Balance = z
  .object({
    asset: z.string(),
    base_unit_name: z.string(),
    ...amountFields('balance'),
    ...amountFields('wallet'),
    ...amountFields('total'),
    wallet_status: WalletStatus,
  })
  .meta({ id: 'Balance', description: 'Credits, the on-chain wallet and their sum.' });

export const Account = Balance.extend({
  id: z.string(),
  email: z.string(),
  custodial_wallet: Address,
  is_publisher: z.boolean(),
  publisher_name: z.string().nullable(),
  created_at: Timestamp,
  credential: z
    .object({ via: z.enum(['api_key', 'session', 'oauth']), id: z.string().nullable(), policy: SpendingPolicy.nullable() })
    .optional()
    .meta({ description: "The credential of this request (GET /v1/me): an API key's or a connection's id and spending policy with its remaining budget." }),
}).meta({ id: 'Account', description: 'The account, with the Balance fields.' });

export const SessionAccount = Account.extend({
  /** Echo it in `X-CSRF-Token` on writes made with the session cookie. */
  csrf_token: z.string(),
}).meta({ id: 'SessionAccount', description: 'The Account, plus the CSRF token of the new session.' });

export const Wallet = z
  .object({
    pubkey: Address,
    asset: z.string(),
    asset_issuer: Address,
    base_units: BaseUnits,
    lamports: BaseUnits,
    asset_amount: z.number(),
    sol: BaseUnits.describe('legacy twin of base_units (the spec, Versioning rule 2)'),
    status: WalletStatus,
    explorer_url: z.string(),
    master_wallet: Address,
  })
  .meta({ id: 'Wallet', description: "The account's on-chain wallet." });

export const Transaction = z
  .object({
    id: z.string(),
    type: z.enum(['topup', 'call']),
    amount_lamports: BaseUnits,
    amount_base_units: BaseUnits,
    amount_usd: z.number(),
    service: z.string().nullable(),
    /** A paid top-up's payment (also while `pending`: the submitted hash); a call's settlement funding transaction. */
    tx_signature: z.string().nullable(),
    explorer_url: z.string().nullable(),
    status: z.enum(['pending', 'completed', 'refunded', 'failed']),
    /** `wallet` for a top-up paid from the wallet (and calls paid from it), `credit` for calls paid with credits. */
    paid_with: z.string().nullable(),
    /** `signup`, `free:...` for free top-ups, a failed payment's reason. */
    note: z.string().nullable(),
    /** A call's id, the `callId` of its answer or error (camel case, as it is named there); null for a top-up. */
    callId: z.string().nullable().meta({ description: "A call's id, as its answer's or error's `callId` names it; null for a top-up." }),
    /** The idempotency key the call was made under (the stdio adapter's and the client's own, or a random one), or null. */
    idempotencyKey: z
      .string()
      .nullable()
      .meta({ description: 'The idempotency key the call was made under (`Idempotency-Key`, `_meta["farebox/idempotencyKey"]`), or null.' }),
    created_at: Timestamp,
  })
  .meta({ id: 'Transaction', description: 'A top-up or a call, newest first in lists.' });

export const TopupResult = Balance.extend({ topup: Transaction }).meta({ id: 'TopupResult', description: 'The new Balance and the top-up.' });

/**
 * The ways a service can be paid (docs/api.md, "Payment rails"): `credits` (an
 * account's credits, through the gateway: every service), `mpp-channel` (an MPP
 * stellar channel to the treasury, through the gateway with no account: every
 * service while this gateway takes channel sessions), `x402-exact` and `escrow`
 * (paid at the service's own endpoint, when its manifest lists them, as the
 * x402 bazaar offers them).
 */
export const PAYMENT_RAILS = ['credits', 'mpp-channel', 'x402-exact', 'escrow'] as const;
export const PaymentRail = z.enum(PAYMENT_RAILS).meta({
  id: 'PaymentRail',
  description:
    '`credits` and `mpp-channel` (when the gateway takes MPP channel sessions): paid through the gateway; `x402-exact` and `escrow`: paid at the service itself, as its manifest says.',
});

export const Service = z
  .object({
    service: z.string(),
    /** USDC per call. */
    pricePerCall: z.number(),
    pricePerCallBaseUnits: BaseUnits,
    pricePerCallLamports: BaseUnits,
    description: z.string(),
    endpoint: z.string(),
    ownerWallet: Address,
    acceptedToken: z.string(),
    totalCalls: z.number().int(),
    totalEarned: z.number(),
    /** Unix time, seconds. */
    createdAt: z.number().int(),
    source: z.string(),
    /** Relevance, with a query. */
    score: z.number().optional(),
    /** With a query: which ranking served it, `hybrid` (keywords and multilingual embeddings) or `keyword` (BM25 alone: no model loaded). */
    search_mode: z.enum(['hybrid', 'keyword']).optional(),
    health: ServiceHealth,
    /** How the service can be paid, in this order: `credits`, `mpp-channel`, `x402-exact`, `escrow`. */
    rails: z
      .array(PaymentRail)
      .meta({ description: 'How the service can be paid (docs/api.md, "Payment rails"), in this order: `credits`, `mpp-channel`, `x402-exact`, `escrow`.' }),
  })
  .meta({ id: 'Service', description: 'A catalog item, with its health as the gateway measures its paid calls.' });

export const RegisteredService = Service.extend({ txHash: z.string(), explorerUrl: z.string() }).meta({
  id: 'RegisteredService',
  description: 'A service as registered or updated, with the on-chain transaction.',
});

export const RemovedService = z
  .object({ service: z.string(), removed: z.literal(true), txHash: z.string(), explorerUrl: z.string() })
  .meta({ id: 'RemovedService' });

export const ServiceManifest = z
  .object({
    service: z.string(),
    pricing_note: z.string().nullable(),
    dynamic_pricing: z.boolean(),
    payments: z.array(z.string()),
    manifest_url: z.string(),
    fetched_at: Timestamp,
  })
  .meta({ id: 'ServiceManifest', description: "What a service's own `/manifest` says about its price, checked against the registry." });

/** `{ lamports, base_units, usd }`: `cost` and `newBalance` of a call result, settlement amounts. */
export const Cost = z.object({ lamports: BaseUnits, base_units: BaseUnits, usd: z.number() }).meta({ id: 'Cost' });

export const TraceStep = z
  .object({
    name: z.string(),
    status: z.enum(['ok', 'failed', 'skipped']),
    startedAt: Timestamp,
    durationMs: z.number(),
    detail: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ id: 'TraceStep' });

export const Trace = z.object({ steps: z.array(TraceStep) }).meta({ id: 'Trace' });

export const CallResult = z
  .object({
    result: z.unknown(),
    cost: Cost,
    paidWith: z.enum(['credit', 'wallet']),
    mode: z.enum(['platform-signed', 'wallet-escrow']),
    newBalance: Cost,
    /** The on-chain transaction of this call, when one was produced. */
    explorerUrl: z.string().optional(),
    callId: z.string(),
    trace: Trace,
  })
  .meta({ id: 'CallResult' });

/** A failed call: refunded; the reason, the call id and the trace. */
export const CallError = ErrorBody.extend({
  callId: z.string().optional(),
  refunded: z.boolean().optional().meta({ description: 'The call was charged and the charge is back in credits.' }),
  paidWith: z.string().optional(),
  mode: z.string().optional(),
  escrowId: z.string().optional(),
  trace: Trace.optional(),
  // A refusal by the key's or connection's spending policy (402, 403): nothing was charged.
  ...RefusalFields,
  // A call the connection's owner must approve first (403 CONFIRMATION_REQUIRED): nothing was charged.
  approval_id: z.string().optional(),
  approval_url: z.string().optional(),
  expires_at: Timestamp.optional(),
  service: z.string().optional(),
  price_usd: z.number().optional(),
}).meta({
  id: 'CallError',
  description:
    'A failed call (refunded): the reason, and the call id and trace once the call started. A refusal by a spending policy (402, 403) adds limit_source, limit_usd, remaining_usd and resets_at (and allowed_services or max_call_usd); nothing was charged.',
});

/** What an API key may do (docs/api.md, "Credentials and what each may do"). */
export const ApiKeyKind = z.enum(['spend', 'manage']).meta({
  id: 'ApiKeyKind',
  description:
    '`spend`: may call, search and read its own balance, transactions and policy (every key with a spending policy is one); `manage`: may also manage keys, connections, top-ups and publishing, like the signed-in owner.',
});

export const ApiKey = z
  .object({
    id: z.string(),
    name: z.string(),
    prefix: z.string(),
    kind: ApiKeyKind,
    created_at: Timestamp,
    last_used_at: Timestamp.nullable(),
    ...SpendingPolicy.shape,
  })
  .meta({ id: 'ApiKey', description: 'An API key record (never the key).' });

export const CreatedApiKey = z
  .object({
    id: z.string(),
    name: z.string(),
    key: z.string().startsWith('sk_live_'),
    prefix: z.string(),
    kind: ApiKeyKind,
    created_at: Timestamp,
    ...SpendingPolicy.shape,
  })
  .meta({ id: 'CreatedApiKey', description: 'A new API key: `key` is shown this once.' });

export const Revoked = z.object({ id: z.string(), revoked: z.boolean() }).meta({ id: 'Revoked' });

export const OAuthConnection = z
  .object({
    id: z.string(),
    client_id: z.string(),
    client_name: z.string(),
    scopes: z.array(z.string()),
    daily_limit_usd: z.number().nullable(),
    daily_limit_base_units: BaseUnits.nullable(),
    spent_today_usd: z.number(),
    spent_today_base_units: BaseUnits,
    created_at: Timestamp,
    last_used_at: Timestamp.nullable(),
    ...SpendingPolicy.shape,
  })
  .meta({
    id: 'OAuthConnection',
    description:
      'An app authorized through OAuth, with its spending policy (daily_limit_*: the limit when its period is day; spent_today_*: what it spent this UTC day).',
  });

export const PublisherActivation = z
  .object({ is_publisher: z.literal(true), publisher_name: z.string().nullable(), payout_wallet: Address, wallet_status: WalletStatus })
  .meta({ id: 'PublisherActivation' });

export const Fee = z.object({ pct: z.number() });

export const PublisherOverview = z
  .object({
    publisher_name: z.string().nullable(),
    payout_wallet: Address,
    wallet_status: WalletStatus,
    fee: Fee,
    calls: z.number().int(),
    ...amountFields('earned'),
    ...amountFields('pending'),
    ...amountFields('settled'),
    ...amountFields('gross'),
    ...amountFields('fee'),
    services: z.array(Service),
    linked_owners: z
      .array(Address)
      .meta({ description: 'Owner keys linked to the account (POST /v1/publisher/links): their services and earnings are counted here too.' }),
    ...amountFields('wallet'),
  })
  .meta({
    id: 'PublisherOverview',
    description:
      "Earnings (net of the fee), pending and settled, the services with their stats, the wallet; over the account's wallet and every linked owner key.",
  });

const SettlementTransaction = z.object({
  step: z.string(),
  tx_hash: z.string(),
  explorer_url: z.string(),
  lamports: BaseUnits.optional(),
  base_units: BaseUnits.optional(),
  usd: z.number().optional(),
  batch_id: z.string().optional(),
});

export const Settlement = z
  .object({
    id: z.string(),
    state: z.string(),
    escrow_id: z.string().nullable(),
    escrow_url: z.string().nullable(),
    receiver: Address,
    calls: z.number().int(),
    fee: Cost.extend({ pct: z.number() }),
    gross: Cost,
    net: Cost,
    funded: Cost,
    paid: Cost,
    opened_at: Timestamp,
    closed_at: Timestamp.nullable(),
    settled_at: Timestamp.nullable(),
    error: z.string().nullable(),
    transactions: z.array(SettlementTransaction),
    steps: z.array(z.object({ from: z.string().nullable(), to: z.string(), tx_hash: z.string().nullable(), at: Timestamp })),
  })
  .meta({ id: 'Settlement', description: 'One settlement cycle (batch) of one publisher owner.' });

export const SettleResult = z
  .object({ settled: z.boolean(), message: z.string().optional(), settlement: z.union([Settlement, z.null()]), settlements: z.array(Settlement).optional() })
  .meta({
    id: 'SettleResult',
    description: "The caller's cycle, closed and run to the end; `settled: false` with a message when there was nothing to settle.",
  });

export const AnalyticsPoint = z
  .object({
    day: z.string(),
    calls: z.number().int(),
    earned_base_units: BaseUnits,
    earned_lamports: BaseUnits,
    earned_asset: z.number(),
    earned_sol: BaseUnits,
    earned_usd: z.number(),
  })
  .meta({ id: 'AnalyticsPoint', description: 'One UTC day, net of the fee.' });

export const PlatformStats = z
  .object({
    services: z.number().int(),
    accounts: z.number().int(),
    calls: z.number().int(),
    ...amountFields('volume'),
    ...amountFields('revenue'),
    ...amountFields('publisher_earnings'),
    ...amountFields('credits_outstanding'),
    ...amountFields('held'),
    fee: Fee,
  })
  .meta({ id: 'PlatformStats' });

export const PlatformKey = z
  .object({
    publicKey: z.string(),
    network: z.string(),
    x402Network: z.string(),
    passphrase: z.string(),
    rpcUrl: z.string(),
    horizonUrl: z.string(),
    friendbotUrl: z.string().nullable(),
    registryContractId: z.string().nullable(),
    usdc: z.object({ code: z.string(), issuer: Address, contractId: z.string().optional() }),
    explorerUrl: z.string(),
    treasury: Address,
    feePct: z.number(),
    /** `wallet`: top-ups are paid in USDC from the account's wallet; `free`: unpaid test credits. */
    topups: z.enum(['wallet', 'free']),
  })
  .meta({ id: 'PlatformKey', description: "The platform's certificate public key and network settings." });

export const Health = z
  .object({
    ok: z.boolean(),
    service: z.string(),
    network: z.string(),
    database: z.string(),
    /** The catalog search: in this process (`hybrid`, `keyword-only`) or a discovery service (`remote`). */
    search: z.union([
      z.object({
        mode: z.enum(['hybrid', 'keyword-only']),
        reason: z.string().optional(),
        model: z.string().optional(),
        documents: z.number().int(),
        vectors: z.number().int(),
        pendingEmbeddings: z.number().int(),
        vectorIndex: z.enum(['flat', 'hnsw']),
        vectorIndexReason: z.string().optional(),
        graphLoadedFromSnapshot: z.boolean().optional(),
        /** While the model downloads in the background (mode `keyword-only` until it is ready): bytes fetched and in all. */
        download: z.object({ loaded: z.number(), total: z.number() }).optional(),
      }),
      z.object({
        mode: z.literal('remote'),
        url: z.string(),
        documents: z.number().int(),
        vectors: z.number().int(),
        backend: z.object({ mode: z.string(), documents: z.number().int(), vectors: z.number().int(), ledger: z.number().int().nullable() }).nullable(),
        lastError: z.string().nullable(),
      }),
    ]),
    catalog: z.object({ services: z.number().int() }),
    rate_limits: z.string(),
    uptime_s: z.number(),
  })
  .meta({ id: 'Health' });

export const DependencyReport = z
  .object({
    state: z.enum(['up', 'down', 'unknown']),
    required: z.boolean(),
    since: z.string().nullable(),
    reason: z.string().optional(),
    effect: z.string().optional(),
  })
  .meta({ id: 'DependencyReport', description: 'One dependency: its state, whether readiness needs it, and while down why and what callers notice.' });

export const Readiness = z
  .object({
    ready: z.boolean(),
    status: z.enum(['ok', 'degraded', 'down']),
    reasons: z.array(z.string()),
    checks: z.record(z.string(), z.string()),
    dependencies: z.record(z.string(), DependencyReport),
  })
  .meta({
    id: 'Readiness',
    description:
      'Whether this gateway can answer calls correctly (503 only when a required dependency is down: the database, the catalog before its first sync, those in FAREBOX_READY_REQUIRES), and each dependency’s state (degraded: an optional one is down).',
  });

export const LoggedOut = z.object({ ok: z.literal(true) }).meta({ id: 'LoggedOut' });
