import type { Ed25519Signer } from '@farebox/protocol';
import type { Budget, IdempotencyClaim } from '@farebox/ledger';
import type { schemas } from '@farebox/contract';
import type { z } from 'zod';
import type { Principal } from './auth/accounts.js';
import type { Clock } from './clock.js';
import type { EndpointPolicy } from './security/endpoint-guard.js';

// The types of a paid call (calls.ts runs it): what it is priced by, the credit
// port it pays through, its trace, its answers, its options and its summary.

/** The catalog entry a call is priced and paid by: the registry's floor price and owner, never the service's word. */
export interface CallableService {
  service: string;
  owner: string;
  pricePerCall: bigint;
  endpoint: string;
}

/** The two-phase credit operations a call needs (implemented over @farebox/ledger). */
export interface CreditsPort {
  /**
   * Places a hold; throws `GatewayError('INSUFFICIENT_BALANCE')` when credits do not cover it. `principal`: the
   * credential making the call (its spending policy, if any, applies to the hold).
   */
  hold(input: {
    accountId: string;
    amount: bigint;
    callId: string;
    service: string;
    idempotencyKey?: string;
    budget?: Budget;
    principal?: Principal;
  }): Promise<{ holdId: string }>;
  /** Posts a hold: the call succeeded; the earning goes to `publisherOwner`. Returns the account's credits after. */
  post(holdId: string, input: { publisherOwner: string; service: string; gross: bigint }): Promise<{ balance: bigint; posted: boolean }>;
  /** Voids a hold: the money returns to credits. Returns the credits after. */
  void(holdId: string, reason: string): Promise<{ balance: bigint }>;
  /**
   * Runs `fn` once per (account, key); a retry with the same request gets the first response back. When `fn`
   * says its answer comes `later` (its charge waits for the database) and throws, the key stays claimed and
   * that answer is stored under it.
   */
  idempotent(accountId: string, key: string, requestHash: string, fn: (claim: IdempotencyClaim<CallResponse>) => Promise<CallResponse>): Promise<CallResponse>;
}

/** One step of a call's payment timeline. */
export interface TraceStep {
  name: string;
  status: 'ok' | 'failed' | 'skipped';
  startedAt: string;
  durationMs: number;
  detail?: Record<string, unknown>;
}

/** A call's answer as stored for idempotent replays: its status and JSON text, verbatim. */
export interface CallResponse {
  status: number;
  body: string;
}

/** The answer of a charged, served call (`@farebox/contract`'s CallResult). */
export type CallResultBody = z.output<typeof schemas.CallResult>;
/** The answer of a call that failed after it started: refunded; the reason, the call id and the trace. */
export type CallFailureBody = z.output<typeof schemas.CallError>;

/**
 * What `calls.call` answers: the domain object (`value`: the call result, or
 * the refunded failure) and the same answer as JSON text (`json`: what the
 * HTTP host sends, with the service's result as the exact bytes it sent, and
 * what an idempotent replay gives back).
 */
export type CallAnswer =
  | { readonly ok: true; readonly status: 200; readonly value: CallResultBody; readonly json: string }
  | { readonly ok: false; readonly status: number; readonly value: CallFailureBody; readonly json: string };

export interface CallsOptions {
  credits: CreditsPort;
  resolveService(name: string): Promise<CallableService | undefined>;
  signer: Ed25519Signer;
  policy: EndpointPolicy;
  timeoutMs: number;
  maxPriceMultiple: number;
  /** Largest service response accepted, bytes (default 5 MiB). */
  maxResponseBytes?: number;
  /**
   * When credits do not cover the price: pay another way (the wallet path,
   * answering the call itself) or make credits cover it (`retry`: the hold is
   * tried once more). Throws `insufficient balance` when nothing covers it.
   */
  onInsufficientCredits?: (input: {
    principal: Principal;
    service: CallableService;
    payload: Record<string, unknown>;
    amount: bigint;
    callId: string;
    /** The call's idempotency key, when it had one (the wallet payment records it: `get_transactions` shows it). */
    idempotencyKey?: string | undefined;
    steps: TraceStep[];
  }) => Promise<{ response: CallResponse } | { retry: true }>;
  /** Called once per call that reached the payment steps: the call's log line and metrics. */
  onFinished?: (summary: CallSummary) => void;
  /** The gateway's clock (default `Date.now`): certificates' issue time and freshness, the trace's times, the endpoint checks' cache. */
  now?: Clock;
  /**
   * The confirmation an OAuth connection's call needs first (oauth/confirmations.ts `gate`): throws
   * `403 CONFIRMATION_REQUIRED` with the approval link, or answers the highest price the call may charge.
   */
  gate?: (principal: Principal, service: string, approvalId: string | undefined) => Promise<{ ceiling?: bigint; failed?: () => Promise<unknown> }>;
  /** A replayed answer is checked against the replaying credential's policy (its allowlist and per-call maximum). */
  admitReplay?: (principal: Principal, service: string, amount: bigint) => Promise<void>;
}

/** The options of one call (`calls.call`). */
export interface CallOptions {
  idempotencyKey?: string;
  /** `Farebox-Max-Cost`: the most the call may charge (USD). */
  maxCost?: string;
  requestId?: string;
  /** `Farebox-Approval`: the approval the person gave on the gateway's page, for a call that needs confirming. */
  approvalId?: string;
  /** Set by `/mcp`'s `call_agent`, whose own flow confirmed the call (never from a request). */
  confirmed?: boolean;
}

/** What a finished call reports for logs and metrics (no payload, no result). */
export interface CallSummary {
  callId: string;
  requestId: string | undefined;
  accountId: string;
  service: string;
  amount: bigint;
  /** `ok`: charged; `refunded`: the service failed and the hold was voided; `refused`: nothing was charged. */
  outcome: 'ok' | 'refunded' | 'refused';
  paidWith: 'credit' | 'wallet' | 'none';
  status: number;
  totalMs: number;
  steps: ReadonlyArray<{ name: string; status: TraceStep['status']; durationMs: number }>;
  /** Why it was refused or failed (a refunded call's reason). */
  error?: string;
  /** Made by the service's own owner (its wallet is the registry's owner): left out of the service's health. */
  ownCall?: boolean;
}
