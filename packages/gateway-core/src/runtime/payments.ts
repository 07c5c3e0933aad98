import { isValidServiceName } from '@farebox/protocol';
import { LedgerError, type Ledger } from '@farebox/ledger';
import type { Clock } from '../clock.js';
import type { GatewayConfig } from '../config.js';
import { createCalls, type CallableService, type CallResponse, type CallsOptions, type CallSummary, type CreditsPort } from '../calls.js';
import { ChargePendingError, databaseUnavailable, isDatabaseUnavailable } from '../db-errors.js';
import { GatewayError } from '../errors.js';
import { translated } from '../ledger-errors.js';
import type { SpendingLimits } from '../oauth/spending.js';
import type { Logger } from '../observability/log.js';
import { CALL_STEP_METRIC, type Metrics } from '../observability/metrics.js';
import type { Settlement } from '../settlement/index.js';
import { createTopups, type Topups } from '../topups.js';
import { createWalletPath, type WalletPath } from '../wallet-path.js';
import type { Infrastructure } from './infrastructure.js';
import { throughOutage } from './outage-retry.js';

/** How money moves for calls and top-ups: credits over the ledger, the wallet path, top-ups. */
export interface Payments {
  calls: ReturnType<typeof createCalls>;
  topups: Topups;
  walletPath: WalletPath | undefined;
}

export interface PaymentsDeps {
  infra: Infrastructure;
  config: GatewayConfig;
  settlement: Settlement;
  spending: SpendingLimits;
  logger: Logger;
  metrics: Metrics;
  log: (message: string, err?: unknown) => void;
  /** Test hook: the crash tests stop the process at a named point. */
  crashPoint: ((name: string) => void) | undefined;
  /** The gateway's clock. */
  now: Clock;
  /** The confirmation an OAuth connection's call needs first (oauth/confirmations.ts). */
  gate?: CallsOptions['gate'];
  /** Told every finished call too, after its log line (the services' health counts it: health/index.ts). */
  onCall?: (c: CallSummary) => void;
}

/**
 * The two-phase credit operations of a call, over the ledger (its errors as
 * the gateway's). A post or void that meets a database outage is asked again
 * for up to `outage.waitMs` while the caller waits, then in the background
 * (outage-retry.ts): the call answers its real outcome when the database
 * comes back in time, and the hold is resolved as soon as it does.
 */
export function ledgerCredits(
  ledger: Ledger,
  holdTimeoutMs: number,
  metrics: Metrics,
  outage: { waitMs: number; log: (message: string, err?: unknown) => void; leaseRetryAfterMaxS?: number; now?: Clock } = {
    waitMs: 15_000,
    log: () => undefined,
  },
): CreditsPort {
  const retry = { waitMs: outage.waitMs, keepTryingMs: holdTimeoutMs, log: outage.log, ...(outage.now ? { now: outage.now } : {}) };
  const cap = outage.leaseRetryAfterMaxS;
  return {
    // One shape of options for every hold (absent fields undefined): the ledger's hold stays monomorphic.
    hold: (i) =>
      translated(async () => ({
        holdId: (
          await ledger.hold(i.accountId, i.amount, {
            callId: i.callId,
            service: i.service,
            timeoutMs: holdTimeoutMs,
            idempotencyKey: i.idempotencyKey || undefined,
            budget: i.budget,
          })
        ).hold.id,
      })),
    post: (holdId, i) =>
      translated(async () => {
        let outage = false;
        let r: Awaited<ReturnType<Ledger['post']>> | null;
        let later: Promise<typeof r | undefined> = Promise.resolve(undefined);
        try {
          r = await throughOutage(
            async () => {
              try {
                return await ledger.post(holdId, i);
              } catch (err) {
                if (isDatabaseUnavailable(err)) outage = true;
                // A hold's statement commits without waiting for its WAL flush: a server crash right after it can lose
                // the hold, and with it the debit. Nothing was charged then.
                else if (outage && err instanceof LedgerError && err.code === 'HOLD_NOT_FOUND') return null;
                throw err;
              }
            },
            `post of hold ${holdId}`,
            retry,
            (outcome) => void (later = outcome),
          );
        } catch (err) {
          // The service answered; whether the post landed is not known yet: the background's outcome says, later.
          if (!isDatabaseUnavailable(err)) throw err;
          throw new ChargePendingError(
            err,
            later.then((p) => (p ? { balance: p.balance, posted: p.hold.state === 'posted' } : undefined)),
          );
        }
        if (r === null) throw databaseUnavailable();
        return { balance: r.balance, posted: r.hold.state === 'posted' };
      }),
    void: (holdId, reason) =>
      translated(async () => ({ balance: (await throughOutage(() => ledger.void(holdId, reason), `void of hold ${holdId}`, retry)).balance })),
    idempotent: (accountId, key, hash, fn) =>
      translated(async () => {
        const r = await ledger.withIdempotency<CallResponse>(accountId, key, hash, fn);
        if (r.replayed) metrics.idempotencyReplays.inc();
        return r.response;
      }).catch((err: unknown) => {
        throw cap === undefined ? err : capRetryAfter(err, cap);
      }),
  };
}

/**
 * A 409 for a key still leased asks the caller back after the lease's time
 * left, at most `maxS`: a lease whose gateway died is ended within the
 * liveness timeout and one beat, so no caller waits out the rest of a dead
 * gateway's 60 s; a live attempt still running answers another 409 with the
 * time then left (docs/api.md, "Idempotency keys and their lease").
 */
function capRetryAfter(err: unknown, maxS: number): unknown {
  const after = err instanceof GatewayError ? Number(err.headers?.['Retry-After']) : Number.NaN;
  if (!(err instanceof GatewayError) || !(after > maxS)) return err;
  return new GatewayError(err.code, err.message, err.data, { ...err.headers, 'Retry-After': String(maxS) }, { cause: err.cause });
}

/** The reporter, then `also` (off the call path: the reporter runs after the answer is on its way). */
const withHealth =
  (report: (c: CallSummary) => void, also: ((c: CallSummary) => void) | undefined) =>
  (c: CallSummary): void => {
    report(c);
    also?.(c);
  };

/** One log line and the metrics of each paid call. */
export function callFinishedReporter(logger: Logger, metrics: Metrics): (c: CallSummary) => void {
  return (c) => {
    metrics.calls.inc({ outcome: c.outcome, paid_with: c.paidWith });
    metrics.callSteps.observe({ step: 'total' }, c.totalMs / 1000);
    const stepMs: Record<string, number> = {};
    for (const st of c.steps) {
      const name = CALL_STEP_METRIC[st.name];
      if (name) metrics.callSteps.observe({ step: name }, st.durationMs / 1000);
      stepMs[st.name] = (stepMs[st.name] ?? 0) + st.durationMs;
    }
    if (logger.isLevelEnabled('info')) {
      logger.info(
        {
          event: 'call',
          reqId: c.requestId,
          callId: c.callId,
          accountId: c.accountId,
          service: c.service,
          amount: c.amount.toString(),
          outcome: c.outcome,
          paidWith: c.paidWith,
          status: c.status,
          ms: c.totalMs,
          steps: stepMs,
          ...(c.error ? { error: c.error } : {}),
        },
        'call',
      );
    }
  };
}

export function createPayments({ infra, config, settlement, spending, logger, metrics, log, crashPoint, now, gate, onCall }: PaymentsDeps): Payments {
  const { ledger, wallets, network, treasuryAddress, chain, mirror, registry, policy } = infra;
  async function resolveService(name: string): Promise<CallableService | undefined> {
    // A registry name that breaks the name policy is never called, even when it is on chain.
    if (!isValidServiceName(name)) return undefined;
    const agent = mirror.get(name) ?? (await registry.getAgent(name).catch(() => null)) ?? undefined;
    return agent ? { service: agent.service, owner: agent.owner, pricePerCall: agent.pricePerCall, endpoint: agent.endpoint } : undefined;
  }
  const topups = createTopups({
    ledger,
    wallets,
    network,
    treasuryAddress,
    probe: settlement.probe,
    mode: config.freeTopups ? 'free' : 'wallet',
    walletUsdc: async (a) => {
      const b = await chain.balances(a);
      return b.exists && b.usdc !== null ? b.usdc : null;
    },
    ...(crashPoint ? { crashPoint } : {}),
    log,
    now,
  });
  const walletPath = settlement.escrow
    ? createWalletPath({
        ledger,
        wallets,
        network,
        escrow: settlement.escrow,
        topups,
        treasuryAddress,
        treasuryQueue: infra.treasuryQueue,
        policy,
        walletBalance: async (a) => (await chain.balances(a)).usdc ?? 0n,
        log,
        now,
        ...(crashPoint ? { crashPoint } : {}),
      })
    : undefined;
  const calls = createCalls({
    credits: spending.wrapCredits(
      ledgerCredits(ledger, config.holdTimeoutMs, metrics, {
        waitMs: config.dbOutageWaitMs,
        log,
        now,
        leaseRetryAfterMaxS: Math.ceil((config.liveness.timeoutMs + 2 * config.liveness.intervalMs) / 1000),
      }),
    ),
    resolveService,
    signer: infra.certificateSigner,
    policy,
    timeoutMs: config.callTimeoutMs,
    maxPriceMultiple: config.maxPriceMultiple,
    onFinished: withHealth(callFinishedReporter(logger, metrics), onCall),
    now,
    admitReplay: spending.admitReplay,
    ...(gate ? { gate } : {}),
    ...(walletPath ? { onInsufficientCredits: spending.wrapWalletPath(walletPath.onInsufficientCredits) } : {}),
  });
  return { calls, topups, walletPath };
}
