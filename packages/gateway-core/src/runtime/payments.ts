import { isValidServiceName } from '@farebox/protocol';
import type { Ledger } from '@farebox/ledger';
import type { Clock } from '../clock.js';
import type { GatewayConfig } from '../config.js';
import { createCalls, type CallableService, type CallResponse, type CallSummary, type CreditsPort } from '../calls.js';
import { translated } from '../ledger-errors.js';
import type { SpendingLimits } from '../oauth/spending.js';
import type { Logger } from '../observability/log.js';
import { CALL_STEP_METRIC, type Metrics } from '../observability/metrics.js';
import type { Settlement } from '../settlement/index.js';
import { createTopups, type Topups } from '../topups.js';
import { createWalletPath, type WalletPath } from '../wallet-path.js';
import type { Infrastructure } from './infrastructure.js';

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
}

/** The two-phase credit operations of a call, over the ledger (its errors as the gateway's). */
export function ledgerCredits(ledger: Ledger, holdTimeoutMs: number, metrics: Metrics): CreditsPort {
  return {
    hold: (i) =>
      translated(async () => ({
        holdId: (
          await ledger.hold(i.accountId, i.amount, {
            callId: i.callId,
            service: i.service,
            timeoutMs: holdTimeoutMs,
            ...(i.idempotencyKey ? { idempotencyKey: i.idempotencyKey } : {}),
            ...(i.budget ? { budget: i.budget } : {}),
          })
        ).hold.id,
      })),
    post: (holdId, i) =>
      translated(async () => {
        const r = await ledger.post(holdId, i);
        return { balance: r.balance, posted: r.hold.state === 'posted' };
      }),
    void: (holdId, reason) => translated(async () => ({ balance: (await ledger.void(holdId, reason)).balance })),
    idempotent: (accountId, key, hash, fn) =>
      translated(async () => {
        const r = await ledger.withIdempotency<CallResponse>(accountId, key, hash, fn);
        if (r.replayed) metrics.idempotencyReplays.inc();
        return r.response;
      }),
  };
}

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

export function createPayments({ infra, config, settlement, spending, logger, metrics, log, crashPoint, now }: PaymentsDeps): Payments {
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
        policy,
        walletBalance: async (a) => (await chain.balances(a)).usdc ?? 0n,
        log,
        now,
      })
    : undefined;
  const calls = createCalls({
    credits: spending.wrapCredits(ledgerCredits(ledger, config.holdTimeoutMs, metrics)),
    resolveService,
    signer: infra.certificateSigner,
    policy,
    timeoutMs: config.callTimeoutMs,
    maxPriceMultiple: config.maxPriceMultiple,
    onFinished: callFinishedReporter(logger, metrics),
    now,
    ...(walletPath
      ? { onInsufficientCredits: spending.wrapWalletPath(walletPath.onInsufficientCredits, (r) => 'response' in r && r.response.status === 200) }
      : {}),
  });
  return { calls, topups, walletPath };
}
