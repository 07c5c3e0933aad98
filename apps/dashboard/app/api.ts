/** The gateway client used by every page: same origin, session cookie, CSRF header on writes. */

export class ApiError extends Error {
  readonly status: number;
  readonly body: unknown;
  constructor(status: number, message: string, body: unknown) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
  }
}

function csrfToken(): string | undefined {
  for (const part of document.cookie.split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === 'farebox_csrf') return decodeURIComponent(v.join('='));
  }
  return undefined;
}

export async function api<T>(path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<T> {
  const method = init.method ?? (init.body !== undefined ? 'POST' : 'GET');
  const headers: Record<string, string> = { accept: 'application/json', ...init.headers };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') {
    const csrf = csrfToken();
    if (csrf) headers['x-csrf-token'] = csrf;
  }
  let res: Response;
  try {
    res = await fetch(path, { method, headers, credentials: 'same-origin', ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}) });
  } catch {
    throw new ApiError(0, 'the gateway cannot be reached: check your connection and try again', undefined);
  }
  const text = await res.text();
  let body: unknown = undefined;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = text;
  }
  if (!res.ok) {
    const message = body && typeof body === 'object' && typeof (body as { error?: unknown }).error === 'string' ? (body as { error: string }).error : `request failed (HTTP ${res.status})`;
    if (res.status === 401) window.dispatchEvent(new CustomEvent('farebox:unauthenticated'));
    throw new ApiError(res.status, message, body);
  }
  return body as T;
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export function newIdempotencyKey(): string {
  return typeof crypto.randomUUID === 'function' ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(36).slice(2)}`;
}

// ---- response shapes (docs/api.md) ------------------------------------------

export interface Account {
  id: string;
  email: string;
  custodial_wallet: string;
  is_publisher: boolean;
  publisher_name: string | null;
  created_at: string;
  balance_base_units: number;
  balance_usd: number;
  wallet_status?: WalletStatus;
}

export interface Balance {
  balance_base_units: number;
  balance_usd: number;
  wallet_base_units: number;
  wallet_usd: number;
  total_base_units: number;
  total_usd: number;
  wallet_status?: WalletStatus;
}

/** `provisioning`: the wallet is still being created on chain (USDC sent to it now would fail). */
export type WalletStatus = 'ok' | 'provisioning' | 'unavailable';

/** The Transaction item of a top-up (`topup` in the answer of `POST /v1/topup`). */
export interface Topup {
  id: string;
  type: 'topup';
  amount_base_units: number;
  amount_usd: number;
  tx_signature: string | null;
  explorer_url: string | null;
  status: 'completed' | 'pending' | 'failed';
  paid_with: 'wallet' | null;
  note: string | null;
  created_at: string;
}

export interface TopupResult extends Balance {
  topup: Topup;
}

/** What `GET /v1/platform/key` says about the network (the part the dashboard uses). */
export interface PlatformInfo {
  network: string;
  /** `wallet`: top-ups are paid in USDC from the account's wallet; `free`: unpaid test credits. */
  topups: 'wallet' | 'free';
}

export interface Wallet {
  pubkey: string;
  asset: string;
  /** The USDC issuer on this network (what to send). */
  asset_issuer?: string;
  base_units: number;
  asset_amount: number;
  status?: WalletStatus;
  explorer_url?: string;
  master_wallet: string;
}

export interface Service {
  service: string;
  pricePerCall: number;
  pricePerCallBaseUnits?: number;
  pricePerCallLamports?: number;
  description: string;
  endpoint: string;
  ownerWallet: string;
  acceptedToken: string;
  totalCalls: number;
  totalEarned: number;
  createdAt: number;
  source: string;
  score?: number;
  txHash?: string;
  explorerUrl?: string;
}

export interface TraceStep {
  name: string;
  status: 'ok' | 'failed' | 'skipped' | string;
  startedAt: string;
  durationMs: number;
  detail?: unknown;
}

export interface CallResult {
  result: unknown;
  cost: { lamports: number; usd: number };
  paidWith: 'credit' | 'wallet';
  mode: string;
  newBalance: { lamports: number; usd: number };
  explorerUrl?: string;
  callId?: string;
  trace?: { steps: TraceStep[] };
}

export interface Transaction {
  id: string;
  type: 'topup' | 'call';
  amount_base_units: number;
  amount_usd: number;
  service: string | null;
  tx_signature: string | null;
  explorer_url: string | null;
  /** `completed`; `pending` (a top-up on its way: `tx_signature` is the submitted payment; a call held); `failed` (a top-up the network refused: the reason in `note`); `refunded`. */
  status: string;
  /** `wallet` for a top-up paid from the wallet. */
  paid_with?: string | null;
  /** `signup` for the sign-up credit, `free...` for free top-ups, a failed top-up's reason. */
  note?: string | null;
  created_at: string;
}

export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
}

export interface OAuthConnection {
  id: string;
  client_name: string;
  scopes: string[];
  daily_limit_usd: number | null;
  spent_today_usd: number;
  created_at: string;
  last_used_at?: string | null;
}

export interface Overview {
  publisher_name: string | null;
  payout_wallet: string;
  wallet_status?: WalletStatus;
  fee: { pct: number };
  calls: number;
  earned_base_units: number;
  pending_base_units: number;
  settled_base_units: number;
  gross_base_units: number;
  fee_base_units: number;
  wallet_base_units: number;
  services: Service[];
}

export interface Settlement {
  id: string;
  state: string;
  escrow_id: string | null;
  calls: number;
  fee: { pct: number; lamports: number; usd: number };
  gross: { lamports: number; usd: number };
  net: { lamports: number; usd: number };
  opened_at: string;
  closed_at: string | null;
  transactions: Array<{ step: string; tx_hash: string; explorer_url: string | null }>;
}

export interface AnalyticsPoint {
  day: string;
  calls: number;
  earned_base_units: number;
  earned_usd: number;
}
