import {
  createEscrowPayer,
  DIRECT_CALL_STEPS,
  EscrowPaymentError,
  type EscrowClient,
  type ProgressEvent,
  type TraceStep as DirectTraceStep,
} from '@farebox/escrow';
import { BALANCE_CAP, TOPUP_MAX, type Budget, type Ledger } from '@farebox/ledger';
import { costObject, formatAmount } from '@farebox/protocol';
import type { NetworkConfig } from '@farebox/stellar';
import { walletSigner, type WalletProvider } from '@farebox/wallets';
import type { Principal } from './auth/accounts.js';
import type { CallableService, CallResponse, TraceStep } from './calls.js';
import { round } from './call-timeline.js';
import { CALL_MODES } from './calls.js';
import { systemClock, type Clock } from './clock.js';
import { GatewayError } from './errors.js';
import type { TreasuryQueue } from './runtime/treasury-queue.js';
import { checkEndpoint, guardedFetch, type EndpointPolicy } from './security/endpoint-guard.js';
import type { Topups } from './topups.js';

/** The service's quote offers nothing a wallet can pay directly (it is paid through the gateway only). */
class TakesNoDirectPayment extends Error {}

/** What the credit path hands over when credits do not cover a call. */
export interface ShortfallInput {
  principal: Principal;
  service: CallableService;
  payload: Record<string, unknown>;
  /** The price to pay (the registry floor, or the accepted dynamic quote). */
  amount: bigint;
  callId: string;
  /** The call's idempotency key, recorded with the payment (a transaction row shows it). */
  idempotencyKey?: string | undefined;
  /** The call's trace so far; the wallet path appends its steps. */
  steps: TraceStep[];
  /**
   * The credential's spending budget (a policy with a limit): a wallet payment reserves its amount against it when it
   * is recorded, and spends it or gives it back when it is resolved (by the call, or by {@link WalletPath.reconcile}
   * after a crash), in the ledger.
   */
  budget?: Budget;
}

/** `response`: the call was paid from the wallet; `retry`: credits now cover it (after a wallet top-up). */
export type ShortfallOutcome = { response: CallResponse } | { retry: true };

export interface WalletPathOptions {
  ledger: Ledger;
  wallets: WalletProvider;
  network: NetworkConfig;
  escrow: EscrowClient;
  /** Moves a shortfall from the wallet to the treasury as a top-up, exactly once. */
  topups: Pick<Topups, 'payFromWallet' | 'inWalletTurn'>;
  treasuryAddress: string;
  /** The gateway's one queue of treasury transactions (a refund's dispute and resolution go through it). */
  treasuryQueue: TreasuryQueue;
  policy: EndpointPolicy;
  /** The account wallet's USDC (base units), 0 when it has no trustline or does not exist. */
  walletBalance(address: string): Promise<bigint>;
  log?(message: string, err?: unknown): void;
  /** The gateway's clock (default the machine's): the age after which an interrupted wallet payment is given up. */
  now?: Clock;
  /**
   * Test hook: called at named points (`wallet:recorded`, after the payment and its budget reservation are recorded;
   * `wallet:paid`, after the wallet paid and before the payment is resolved).
   */
  crashPoint?: (name: string) => void;
}

/**
 * The trace steps the wallet path adds after the credit path's (docs/api.md lists them): the path itself, the escrow
 * payer's steps as `wallet_<step>`, the refund of an escrow the service did not serve, and the shortfall top-up.
 */
export const WALLET_STEPS = ['wallet_path', ...DIRECT_CALL_STEPS.map((s) => `wallet_${s}` as const), 'wallet_refund', 'wallet_topup'] as const;
export type WalletStep = (typeof WALLET_STEPS)[number];

/** A step's start: by the gateway's clock (its `startedAt`), and the machine's monotonic time (its duration, clock.ts). */
interface Started {
  at: number;
  t0: number;
}

const step = (name: WalletStep, started: Started, status: TraceStep['status'], detail?: Record<string, unknown>): TraceStep => ({
  name,
  status,
  startedAt: new Date(started.at).toISOString(),
  durationMs: round(performance.now() - started.t0),
  ...(detail ? { detail } : {}),
});

/**
 * The wallet path and the combined case, for calls that credits alone do
 * not cover (see docs/settlement.md):
 * - the wallet covers the price: the call is paid from the account's own
 *   USDC through the full on-chain escrow (deploy, fund, call with
 *   X-PAYMENT, release by the service), signed through the wallet provider:
 *   `paidWith: "wallet"`, `mode: "wallet-escrow"`;
 * - neither alone but both together: the shortfall moves from the wallet to
 *   the treasury on chain and becomes credits (a top-up referenced by the
 *   transaction hash, within the 10,000 USD cap), then credits pay;
 * - otherwise `insufficient balance`, and nothing moves.
 */
export function createWalletPath(o: WalletPathOptions) {
  const log = o.log ?? (() => undefined);
  const now = o.now ?? systemClock;
  // The service is called through the endpoint policy on every connection (addresses and port), as on the credit path.
  const fetchGuarded = guardedFetch(o.policy, { keepAliveTimeout: 10_000 });

  async function payFromWallet(input: ShortfallInput, walletUnits: bigint): Promise<CallResponse> {
    const { principal, service: svc } = input;
    const user = principal.user;
    // A refused endpoint is refused before anything is recorded (the credit path's answer).
    try {
      await checkEndpoint(svc.endpoint, o.policy);
    } catch (err) {
      throw new GatewayError('UPSTREAM', `service endpoint refused: ${(err as Error).message}; nothing was charged`);
    }
    const record = await o.ledger.recordWalletPayment(user.id, {
      kind: 'call',
      callId: input.callId,
      amount: input.amount,
      service: svc.service,
      publisherOwner: svc.owner,
      ...(input.budget ? { budget: input.budget } : {}),
      ...(input.idempotencyKey ? { data: { idempotencyKey: input.idempotencyKey } } : {}),
    });
    o.crashPoint?.('wallet:recorded');
    const started: Started = { at: now(), t0: performance.now() };
    // The same payer as `@farebox/client`'s direct calls, signing with the account's wallet.
    const payer = createEscrowPayer({
      fetch: fetchGuarded,
      network: o.network,
      signer: walletSigner(o.wallets, user.walletAddress),
      escrow: o.escrow,
      platformAddress: o.treasuryAddress,
    });
    const body = JSON.stringify(input.payload ?? null);
    const toTrace = (s: DirectTraceStep): TraceStep => ({
      name: `wallet_${s.step}` satisfies WalletStep,
      status: s.status,
      startedAt: s.startedAt,
      durationMs: s.ms,
      detail: {
        ...(s.txHash ? { txHash: s.txHash } : {}),
        ...(s.explorerUrl ? { explorerUrl: s.explorerUrl } : {}),
        ...(s.detail ?? {}),
        ...(s.error ? { error: s.error } : {}),
      },
    });
    // The escrow is noted on the payment as soon as it exists (with the wallet that funds it), so that reconciliation
    // after a crash can tell a released escrow (paid) from one to refund.
    let noted: string | undefined;
    const onProgress = (e: ProgressEvent) => {
      if (!e.escrowId || e.escrowId === noted) return;
      noted = e.escrowId;
      o.ledger
        .noteWalletPayment(record.id, { escrowId: e.escrowId, data: { wallet: user.walletAddress } })
        .catch((err) => log('noting a wallet payment’s escrow failed', err));
    };
    /**
     * The direct call, tried again (at most three times in all) when the network refused its deploy or fund for a
     * stale sequence number: another gateway on the same database paid from this wallet at that moment, and nothing
     * was funded (a refused transaction moves nothing).
     */
    const directCall = async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await payer.pay({ service: svc.service, endpoint: svc.endpoint, owner: svc.owner }, body, {
            maxCost: walletUnits,
            onProgress,
            // A service paid into the treasury (x402 exact) is paid as its gateway calls are: the amount moves into credits.
            declineExactTo: o.treasuryAddress,
          });
        } catch (err) {
          if (attempt < 3 && refusedBeforeFunding(err, /tx_bad_seq/)) continue;
          throw err;
        }
      }
    };
    try {
      const r = await directCall();
      o.crashPoint?.('wallet:paid');
      const txHash = r.releaseTx ?? [...r.trace.steps].reverse().find((s) => s.txHash)?.txHash ?? r.escrowId;
      const explorerUrl = o.network.explorer.tx(txHash);
      await o.ledger.resolveWalletPayment(record.id, { state: 'completed', txHash, explorerUrl, escrowId: r.escrowId });
      const credits = (await o.ledger.balance(user.id)).balance;
      return {
        status: 200,
        body: JSON.stringify({
          result: r.result,
          cost: costObject(r.cost.baseUnits),
          paidWith: 'wallet',
          mode: CALL_MODES.walletEscrow,
          newBalance: costObject(credits),
          explorerUrl,
          escrowId: r.escrowId,
          callId: input.callId,
          trace: {
            steps: [
              ...input.steps,
              step('wallet_path', started, 'ok', { wallet: user.walletAddress, walletBalance: walletUnits.toString() }),
              ...r.trace.steps.map(toTrace),
            ],
          },
        }),
      };
    } catch (err) {
      if (err instanceof EscrowPaymentError && err.code === 'NO_DIRECT_PAYMENT') {
        // The service is paid through the gateway only, or into the treasury (x402 exact): nothing was paid; the wallet
        // pays the shortfall into credits instead (one transaction into the treasury; refunded as credits if the call fails).
        await o.ledger
          .resolveWalletPayment(record.id, { state: 'failed', error: `${svc.service} takes no direct payment: paid with credits instead` })
          .catch((e) => log('recording a failed wallet payment failed', e));
        throw new TakesNoDirectPayment();
      }
      const data = err instanceof EscrowPaymentError ? err.data : {};
      const escrowId = typeof data.escrowId === 'string' ? data.escrowId : undefined;
      const trace = data.trace?.steps.map(toTrace) ?? [];
      const refund = escrowId ? await refundEscrow(escrowId, user.walletAddress) : undefined;
      const message = err instanceof Error ? err.message : String(err);
      await o.ledger
        .resolveWalletPayment(record.id, { state: 'failed', error: message.slice(0, 4000) })
        .catch((e) => log('recording a failed wallet payment failed', e));
      // The wallet's USDC went to another payment (through another gateway) between the balance read and the funding:
      // nothing was funded, so this is the credit path's answer, not a service failure.
      if (refusedBeforeFunding(err, /not have enough USDC|underfunded/)) throw new GatewayError('INSUFFICIENT_BALANCE', 'insufficient balance');
      // The payer's reason without its way back (a dispute with the payer's key: the gateway refunds the escrow itself), and what happened to the money.
      const reason = typeof data.reason === 'string' ? data.reason : message;
      return {
        status: 500,
        body: JSON.stringify({
          error: `${reason}${walletOutcome(escrowId, refund)}`,
          code: 'UPSTREAM',
          callId: input.callId,
          paidWith: 'wallet',
          mode: CALL_MODES.walletEscrow,
          ...(escrowId ? { escrowId } : {}),
          trace: { steps: [...input.steps, step('wallet_path', started, 'failed'), ...trace, ...(refund?.step ? [refund.step] : [])] },
        }),
      };
    }
  }

  /** True when a direct call failed at its deploy or fund step with `reason`, so that no USDC reached an escrow. */
  function refusedBeforeFunding(err: unknown, reason: RegExp): boolean {
    if (!(err instanceof EscrowPaymentError)) return false;
    const steps = err.data.trace?.steps ?? [];
    const failed = steps.find((s) => s.status === 'failed');
    return failed !== undefined && (failed.step === 'deploy' || failed.step === 'fund') && reason.test(failed.error ?? err.message);
  }

  /** A funded escrow the service did not serve goes back to the payer: the treasury (platform party and dispute resolver) disputes and resolves it. */
  async function refundEscrow(escrowId: string, payer: string): Promise<EscrowRefund> {
    const started: Started = { at: now(), t0: performance.now() };
    let held: bigint | undefined;
    try {
      const [e] = await o.escrow.getEscrows([escrowId]);
      if (!e || e.balance === 0n) return { escrowId, outcome: e?.flags.released ? 'released' : 'empty' };
      if (e.flags.released || e.flags.resolved) return { escrowId, outcome: e.flags.released ? 'released' : 'resolved' };
      held = e.balance;
      const treasury = walletSigner(o.wallets, o.treasuryAddress);
      const amount = e.balance;
      if (!e.flags.disputed)
        await o.treasuryQueue.run(`refund of escrow ${escrowId} (dispute)`, () =>
          o.escrow.run('disputeEscrow', { contractId: escrowId, signer: o.treasuryAddress }, treasury),
        );
      const { txHash } = await o.treasuryQueue.run(`refund of escrow ${escrowId}`, () =>
        o.escrow.run('resolveDispute', { contractId: escrowId, disputeResolver: o.treasuryAddress, distributions: [{ address: payer, amount }] }, treasury),
      );
      const detail = { escrowId, amount: e.balance.toString(), txHash, explorerUrl: o.network.explorer.tx(txHash) };
      return { escrowId, outcome: 'refunded', amount: e.balance, step: step('wallet_refund', started, 'ok', detail) };
    } catch (err) {
      log(`refunding escrow ${escrowId} failed; the treasury can resolve it later`, err);
      const error = err instanceof Error ? err.message : String(err);
      return {
        escrowId,
        outcome: 'failed',
        ...(held !== undefined ? { amount: held } : {}),
        error,
        step: step('wallet_refund', started, 'failed', { escrowId, error }),
      };
    }
  }

  /** What became of the escrow of an interrupted wallet call: released to the service, refunded now or before, never funded, or none of these. */
  async function interruptedEscrow(escrowId: string, wallet: unknown): Promise<'released' | 'refunded' | 'empty' | 'unresolved'> {
    const [e] = await o.escrow.getEscrows([escrowId]);
    if (!e) return 'empty';
    if (e.flags.released) return 'released';
    if (e.balance === 0n) return e.flags.resolved ? 'refunded' : 'empty';
    if (typeof wallet !== 'string') return 'unresolved';
    const refund = await refundEscrow(escrowId, wallet);
    return refund.outcome === 'released' ? 'released' : refund.outcome === 'failed' ? 'unresolved' : 'refunded';
  }

  /** Decides between the wallet path, the combined case and `insufficient balance` (in the wallet's turn). */
  async function decide(input: ShortfallInput): Promise<ShortfallOutcome> {
    const user = input.principal.user;
    const started: Started = { at: now(), t0: performance.now() };
    const [credits, walletUnits] = await Promise.all([o.ledger.balance(user.id), o.walletBalance(user.walletAddress).catch(() => 0n)]);
    if (walletUnits >= input.amount) {
      try {
        return { response: await payFromWallet(input, walletUnits) };
      } catch (err) {
        if (!(err instanceof TakesNoDirectPayment)) throw err;
      }
    }
    const shortfall = input.amount - credits.balance;
    if (shortfall > 0n && credits.balance + walletUnits >= input.amount) {
      if (shortfall > TOPUP_MAX || credits.aggregated + shortfall > BALANCE_CAP) {
        throw new GatewayError('INSUFFICIENT_BALANCE', 'insufficient balance');
      }
      const paid = await o.topups.payFromWallet(user, shortfall, `${input.callId}.topup`, { inTurn: true }).catch((err: unknown) => {
        // The wallet's USDC went to another payment meanwhile (a concurrent call or top-up): nothing covers this call.
        if (err instanceof GatewayError && err.code === 'INSUFFICIENT_BALANCE') throw new GatewayError('INSUFFICIENT_BALANCE', 'insufficient balance');
        throw new GatewayError(
          'UPSTREAM',
          `moving the shortfall from the wallet failed; nothing was charged (${err instanceof Error ? err.message : String(err)})`,
        );
      });
      const txHash = paid.txHash ?? '';
      input.steps.push(
        step('wallet_topup', started, 'ok', {
          amount: shortfall.toString(),
          from: user.walletAddress,
          to: o.treasuryAddress,
          txHash,
          explorerUrl: o.network.explorer.tx(txHash),
        }),
      );
      return { retry: true };
    }
    throw new GatewayError('INSUFFICIENT_BALANCE', 'insufficient balance');
  }

  return {
    /** The credit path's hook: decides between the wallet path, the combined case and `insufficient balance`. */
    async onInsufficientCredits(input: ShortfallInput): Promise<ShortfallOutcome> {
      // In the wallet's turn: what the wallet holds is read after its earlier payments (top-ups or calls) are done, and
      // no other payment of this wallet can spend it before this one is funded.
      return o.topups.inWalletTurn(input.principal.user.walletAddress, () => decide(input));
    },

    /**
     * Wallet-paid calls a crash left pending for more than 10 minutes: with an escrow the service released, completed
     * (its budget reservation spent); with a funded escrow, refunded to the wallet, then failed; without an escrow,
     * failed (nothing was paid; the reservation given back). An escrow that could not be refunded stays pending.
     */
    async reconcile(): Promise<void> {
      for (const p of await o.ledger.pendingWalletPayments()) {
        if (p.kind !== 'call' || now() - p.createdAt.getTime() <= 10 * 60_000) continue;
        try {
          const escrow = p.escrowId ? await interruptedEscrow(p.escrowId, p.data.wallet) : 'empty';
          if (escrow === 'unresolved') {
            log(`wallet payment ${p.id}: escrow ${p.escrowId} is funded and could not be refunded; left pending`);
          } else if (escrow === 'released') {
            await o.ledger.resolveWalletPayment(p.id, { state: 'completed', txHash: p.escrowId!, escrowId: p.escrowId! });
          } else {
            const error = escrow === 'refunded' ? `interrupted; escrow ${p.escrowId} was refunded to your wallet` : 'interrupted before it was applied';
            await o.ledger.resolveWalletPayment(p.id, { state: 'failed', error });
          }
        } catch (err) {
          log(`reconciling wallet payment ${p.id} failed`, err);
        }
      }
    },
  };
}

export type WalletPath = ReturnType<typeof createWalletPath>;

/** What became of a failed wallet call's escrow. */
interface EscrowRefund {
  escrowId: string;
  outcome: 'refunded' | 'failed' | 'empty' | 'released' | 'resolved';
  amount?: bigint;
  error?: string;
  step?: TraceStep;
}

/** The suffix of a failed wallet call's `error`: what happened to the USDC (docs/api.md, "Calls"). */
function walletOutcome(escrowId: string | undefined, refund: EscrowRefund | undefined): string {
  const usdc = (units: bigint | undefined) => (units === undefined ? 'USDC' : `${formatAmount(units, { trim: true })} USDC`);
  if (!escrowId || !refund || refund.outcome === 'empty') return '; nothing was charged: no USDC left your wallet';
  switch (refund.outcome) {
    case 'refunded':
      return `; the ${usdc(refund.amount)} in escrow ${escrowId} was refunded to your wallet`;
    case 'failed':
      return `; refunding the ${usdc(refund.amount)} held in escrow ${escrowId} to your wallet failed (${refund.error}); the platform's operator can refund it`;
    case 'released':
      return `; escrow ${escrowId} was released to the service`;
    default:
      return `; escrow ${escrowId} was already resolved`;
  }
}
