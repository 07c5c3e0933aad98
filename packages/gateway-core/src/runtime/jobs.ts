import { rpc as StellarRpc } from '@stellar/stellar-sdk';
import type { Clock } from '../clock.js';
import type { Logger } from '../observability/log.js';
import type { Metrics } from '../observability/metrics.js';
import type { Topups } from '../topups.js';
import type { WalletCreditAudit } from '../wallet-audit.js';
import { withTimeout } from '../services/platform.js';
import type { Infrastructure } from './infrastructure.js';

/** How often the wallet-credit audit checks new wallet-backed credits against the chain. */
export const WALLET_AUDIT_INTERVAL_MS = 5 * 60_000;

/** The gateway's timers: the hold reaper, top-up reconciliation and the wallet-credit audit. */
export interface BackgroundJobs {
  /** Settles wallet top-ups left unfinished (also run once at start). */
  reconcileTopups(): void;
  /** One pass of the wallet-credit audit (also run once at start); resolves when it is done. */
  auditWalletCredits(): Promise<void>;
  /** One pass of the hold reaper (it runs every 10 s, or every hold timeout when shorter); resolves with the holds it voided. */
  reapExpiredHolds(): Promise<{ voided: string[] }>;
  stop(): void;
}

export interface BackgroundJobsOptions {
  infra: Infrastructure;
  topups: Topups;
  audit: WalletCreditAudit;
  holdTimeoutMs: number;
  logger: Logger;
  metrics: Metrics;
  log: (message: string, err?: unknown) => void;
}

export function startBackgroundJobs(o: BackgroundJobsOptions): BackgroundJobs {
  const { logger, metrics, log } = o;
  const auditWalletCredits = () =>
    o.audit
      .pass()
      .then((r) => {
        metrics.walletCreditsAudited.inc(r.checked);
        metrics.walletCreditProblems.set(r.problems.length + r.ledger.length);
        if (r.problems.length || r.ledger.length) {
          logger.error(
            {
              event: 'wallet-credit-audit',
              problems: r.problems
                .slice(0, 20)
                .map((p) => ({ txHash: p.txHash, accountId: p.accountId, paymentId: p.paymentId, amount: p.amount.toString(), problem: p.problem })),
              ledger: r.ledger.slice(0, 20),
            },
            'wallet-backed credits the chain does not back (docs/operations.md, "Wallet-backed credits")',
          );
        }
      })
      .catch((err) => log('wallet-credit audit failed', err));
  const auditor = setInterval(() => void auditWalletCredits(), WALLET_AUDIT_INTERVAL_MS);
  auditor.unref();
  const reconcileTopups = () =>
    void o.topups
      .reconcile()
      .then(({ credited, failed }) => {
        if (credited) metrics.topupsReconciled.inc({ result: 'credited' }, credited);
        if (failed) metrics.topupsReconciled.inc({ result: 'failed' }, failed);
        if (credited || failed) logger.warn({ event: 'topup-reconcile', credited, failed }, 'wallet top-ups settled by reconciliation');
      })
      .catch((err) => log('top-up reconciliation failed', err));
  const topupReconciler = setInterval(reconcileTopups, 30_000);
  topupReconciler.unref();

  const reapExpiredHolds = async () => {
    // Each hold carries its expiry, stamped by the database's time as the ledger's clock moves it (LedgerOptions.now).
    const r = await o.infra.ledger.reapExpiredHolds();
    if (r.voided.length) {
      metrics.reaperVoided.inc(r.voided.length);
      logger.warn({ event: 'reaper', voided: r.voided.length, holds: r.voided.slice(0, 20) }, 'reaper returned holds left by a crash or a hung call');
    }
    return r;
  };
  const reaper = setInterval(() => void reapExpiredHolds().catch((err) => log('reaper failed', err)), Math.min(10_000, o.holdTimeoutMs));
  reaper.unref();
  return {
    reconcileTopups,
    auditWalletCredits,
    reapExpiredHolds,
    stop() {
      clearInterval(auditor);
      clearInterval(reaper);
      clearInterval(topupReconciler);
    },
  };
}

/** The network's latest ledger, asked at most every 2 s by the gateway's clock (readiness and metrics share it). */
export function latestLedgerReader(infra: Infrastructure, now: Clock): () => Promise<number> {
  const rpc = new StellarRpc.Server(infra.network.rpcUrl, { allowHttp: infra.network.allowHttp });
  let latest: { at: number; value: Promise<number> } | undefined;
  return () => {
    if (!latest || now() - latest.at > 2_000) {
      const value = rpc.getLatestLedger().then((r) => r.sequence);
      value.catch(() => (latest = undefined));
      latest = { at: now(), value };
    }
    return latest.value;
  };
}

/** The gauges `GET /metrics` reads from the gateway's stores. */
export function observeGateway(metrics: Metrics, infra: Infrastructure, networkLedger: () => Promise<number>, now: Clock): void {
  const { db, chain, mirror, searchBackend, redis, treasuryAddress } = infra;
  metrics.observe({
    async holds() {
      const { rows } = await db.query<{ n: string; age: string | null }>(
        `SELECT count(*) AS n, extract(epoch FROM now() - min(created_at)) AS age FROM holds WHERE state = 'pending'`,
      );
      return { pending: Number(rows[0]?.n ?? 0), oldestAgeSeconds: Number(rows[0]?.age ?? 0) };
    },
    async settlementCycles() {
      const { rows } = await db.query<{ state: string; n: string }>('SELECT state, count(*) AS n FROM settlement_cycles GROUP BY state');
      return rows.map((r) => ({ state: r.state, count: Number(r.n) }));
    },
    async treasury() {
      const [b, owed] = await Promise.all([
        withTimeout(chain.balances(treasuryAddress), 2_000, 'horizon'),
        db.query<{ owed: string }>(
          `SELECT COALESCE(sum(e.gross), 0) AS owed FROM earnings e
             LEFT JOIN settlement_cycles c ON c.id = e.cycle_id LEFT JOIN funding_batches f ON f.id = e.funding_batch_id
            WHERE (c.id IS NULL OR c.state NOT IN ('released', 'swept', 'done')) AND (f.id IS NULL OR f.state <> 'confirmed') AND e.reversed_at IS NULL`,
        ),
      ]);
      return { balance: b.usdc ?? 0n, owed: BigInt(owed.rows[0]?.owed ?? 0) };
    },
    async mirror() {
      const m = mirror.status();
      const latest = await withTimeout(networkLedger(), 2_000, 'rpc').catch(() => null);
      return {
        lagLedgers: latest !== null && m.syncedLedger !== null ? Math.max(0, latest - m.syncedLedger) : null,
        lastSyncAgeSeconds: m.lastSyncAt ? (now() - m.lastSyncAt) / 1000 : null,
        failures: m.failures,
      };
    },
    catalogSkipped: () => mirror.status().skipped,
    search: () => searchBackend.status(),
    pool: () => ({ total: db.pool.totalCount, idle: db.pool.idleCount, waiting: db.pool.waitingCount }),
    redis: () => (redis ? (redis.status === 'ready' ? 'ready' : 'down') : 'none'),
  });
}
