import { ConfigError, formatAmount, toUsd } from '@farebox/protocol';
import type { Ledger } from '@farebox/ledger';
import { createAccounts as createStellarAccounts, type NetworkConfig, type TxSigner } from '@farebox/stellar';
import type { User } from '../auth/accounts.js';
import { systemClock, type Clock } from '../clock.js';
import type { Db } from '../db.js';
import type { WalletCreditAudit } from '../wallet-audit.js';
import { GatewayError } from '../errors.js';
import type { Settlement } from '../settlement/index.js';
import type { TreasuryQueue } from '../runtime/treasury-queue.js';
import { parseDuration } from '../settlement/config.js';
import { settlementView } from '../settlement/view.js';
import { intParam } from '../views.js';
import { listAudit, writeAudit } from './audit.js';
import { createDisputes, disputeView, type Decision, type Disputes } from './disputes.js';
import { isOperatorAccount, parseOperatorList } from './roles.js';

export interface OperatorSettings {
  /** Account ids with the operator role by configuration (`FAREBOX_OPERATORS`). */
  operators: Set<string>;
  /** `FAREBOX_DISPUTE_AUTO_REFUND_MINUTES` (default 30; `off` disables): never-served escrows older than this are refunded in full. */
  autoRefundAfterMs: number | null;
  /** `FAREBOX_DISPUTE_INTERVAL` (default 60s): how often open disputes are retried and the policy applied. */
  disputeIntervalMs: number;
}

/** Operator settings as the host passes them (the gateway host reads them from the variables named above). */
export interface OperatorConfigOptions {
  /** Account ids with the operator role, comma or space separated (as `FAREBOX_OPERATORS`), or a list. */
  operators?: string | readonly string[];
  /** Minutes after which a never-served escrow is refunded in full (0 = at once), or `off` (default 30). */
  disputeAutoRefundMinutes?: string | number;
  /** How often open disputes are retried: `500ms`, `10s`, `5m`, `1h`, or a number of seconds (default 60 s). */
  disputeInterval?: string | number;
}

/** Validates the operator settings once (options only); every problem is reported together. */
export function resolveOperatorConfig(options: OperatorConfigOptions = {}): OperatorSettings {
  const list = options.operators;
  const { accounts, problems } = parseOperatorList(typeof list === 'string' || list === undefined ? list : list.join(','));
  let autoRefundAfterMs: number | null = 30 * 60_000;
  const auto = options.disputeAutoRefundMinutes === undefined ? undefined : String(options.disputeAutoRefundMinutes);
  if (auto !== undefined && auto !== '') {
    if (auto === 'off') autoRefundAfterMs = null;
    else if (/^\d+(\.\d+)?$/.test(auto)) autoRefundAfterMs = Math.round(Number(auto) * 60_000);
    else problems.push('FAREBOX_DISPUTE_AUTO_REFUND_MINUTES must be a number of minutes (0 = at once) or off');
  }
  const disputeIntervalMs = parseDuration(options.disputeInterval ?? '60s', 'FAREBOX_DISPUTE_INTERVAL', problems) ?? 0;
  if (problems.length) throw new ConfigError(problems);
  return { operators: accounts, autoRefundAfterMs, disputeIntervalMs };
}

export interface CreateOperatorOptions {
  db: Db;
  ledger: Ledger;
  network: NetworkConfig;
  settlement: Settlement;
  treasury: TxSigner;
  /** The gateway's one queue of treasury transactions (disputes and resolutions go through it). */
  treasuryQueue: TreasuryQueue;
  /** Checks wallet-backed credits against the chain (the reconciliation report). */
  walletAudit: WalletCreditAudit;
  /** Validated once with the rest of the gateway's configuration (`resolveGatewayConfig`). */
  settings: OperatorSettings;
  log(message: string, err?: unknown): void;
  /** The gateway's clock (default the machine's): reports' time, stalled cycles, disputes' age. */
  now?: Clock;
}

/** `{ base_units, usdc, usd }`: base units as a string (exact at any size), USDC text, USD number. */
export const money = (units: bigint) => ({ base_units: units.toString(), usdc: formatAmount(units), usd: toUsd(units) });

const big = (v: unknown): bigint => BigInt(typeof v === 'number' ? Math.trunc(v) : String(v ?? '0'));

const BaseUnits = (v: unknown, name: string): bigint => {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
  if (typeof v === 'string' && /^\d{1,30}$/.test(v)) return BigInt(v);
  throw new GatewayError('BAD_REQUEST', `${name} must be an integer number of base units (1 USDC = 10000000)`);
};

function parseDecision(body: unknown): Decision {
  const b = (body ?? {}) as Record<string, unknown>;
  if (typeof b !== 'object' || Array.isArray(b)) throw new GatewayError('BAD_REQUEST', 'body must be an object');
  const extra = Object.keys(b).filter((k) => !['action', 'payer_base_units', 'receiver_base_units'].includes(k));
  if (extra.length) throw new GatewayError('BAD_REQUEST', `unknown field: ${extra.join(', ')}`);
  if (b.action === 'refund') {
    if (b.payer_base_units !== undefined || b.receiver_base_units !== undefined)
      throw new GatewayError('BAD_REQUEST', 'a refund takes no amounts (it returns the whole balance)');
    return { action: 'refund' };
  }
  if (b.action === 'split')
    return { action: 'split', payer: BaseUnits(b.payer_base_units, 'payer_base_units'), receiver: BaseUnits(b.receiver_base_units, 'receiver_base_units') };
  throw new GatewayError('BAD_REQUEST', 'action must be refund or split');
}

/**
 * The operator's tools: disputes on direct escrows (opened by funders,
 * resolved by policy or by an operator), the treasury against what it owes,
 * settlement cycles and their failures (with retry), platform revenue, and
 * the append-only audit log. Operators come from `FAREBOX_OPERATORS` or the
 * CLI's direct database grant, never from the public API.
 */
export function createOperator(o: CreateOperatorOptions) {
  const settings = o.settings;
  const { db, ledger, network, settlement } = o;
  const now = o.now ?? systemClock;
  const chain = createStellarAccounts(network);
  const disputes: Disputes | undefined = settlement.escrow
    ? createDisputes({
        db,
        escrow: settlement.escrow,
        probe: settlement.probe,
        network,
        treasury: o.treasury,
        autoRefundAfterMs: settings.autoRefundAfterMs,
        treasuryQueue: o.treasuryQueue,
        log: o.log,
        now,
      })
    : undefined;
  /** Last failure per settlement cycle, as the settlement ticks reported it (this process). */
  const failures = new Map<string, { message: string; at: Date }>();
  let timer: NodeJS.Timeout | undefined;
  let ticking: Promise<void> | undefined;

  const requireDisputes = (): Disputes => {
    if (!disputes) throw new GatewayError('UNAVAILABLE', 'escrow disputes need the escrow provider (set TRUSTLESS_WORK_API_KEY)');
    return disputes;
  };

  async function isOperator(user: User): Promise<boolean> {
    return isOperatorAccount(db, settings.operators, user.id);
  }

  /** Refuses (403) anyone but an operator; the refused attempt is audited. */
  async function requireOperator(user: User, action: string, target?: string): Promise<void> {
    if (await isOperator(user)) return;
    await writeAudit(db, { actor: user.email, actorId: user.id, action, target: target ?? null, outcome: 'denied', detail: { reason: 'not an operator' } });
    throw new GatewayError('FORBIDDEN', 'operator role required');
  }

  /** Runs an operator action and writes its audit line (ok or failed). */
  async function audited<T>(
    user: User,
    action: string,
    target: string | null,
    detail: Record<string, unknown>,
    fn: () => Promise<T>,
    outcome?: (r: T) => Record<string, unknown>,
  ): Promise<T> {
    try {
      const r = await fn();
      await writeAudit(db, { actor: user.email, actorId: user.id, action, target, outcome: 'ok', detail: { ...detail, ...(outcome ? outcome(r) : {}) } });
      return r;
    } catch (err) {
      await writeAudit(db, {
        actor: user.email,
        actorId: user.id,
        action,
        target,
        outcome: 'failed',
        detail: { ...detail, error: err instanceof Error ? err.message : String(err) },
      });
      throw err;
    }
  }

  async function obligations() {
    const { rows } = await db.query<Record<string, unknown>>(
      `SELECT e.publisher_owner AS owner,
              count(*) AS calls,
              COALESCE(sum(e.net), 0) AS owed,
              COALESCE(sum(e.gross) FILTER (WHERE b.id IS NULL OR b.state <> 'confirmed'), 0) AS to_fund,
              COALESCE(sum(e.gross) FILTER (WHERE b.state = 'confirmed'), 0) AS in_escrow
       FROM earnings e
       LEFT JOIN settlement_cycles c ON c.id = e.cycle_id
       LEFT JOIN funding_batches b ON b.id = e.funding_batch_id
       WHERE (c.id IS NULL OR c.state NOT IN ('released', 'swept', 'done')) AND e.reversed_at IS NULL
       GROUP BY e.publisher_owner ORDER BY e.publisher_owner`,
    );
    return rows.map((r) => ({ owner: String(r.owner), calls: Number(r.calls), owed: big(r.owed), toFund: big(r.to_fund), inEscrow: big(r.in_escrow) }));
  }

  async function escrowBalances(): Promise<{ count: number; total: bigint; unavailable: boolean }> {
    const { rows } = await db.query<{ escrow_id: string }>(
      `SELECT escrow_id FROM settlement_cycles WHERE escrow_id IS NOT NULL AND state IN ('open', 'closing', 'deployed', 'funded')`,
    );
    const ids = rows.map((r) => r.escrow_id);
    if (!ids.length) return { count: 0, total: 0n, unavailable: false };
    if (!settlement.escrow) return { count: ids.length, total: 0n, unavailable: true };
    let total = 0n;
    try {
      for (let i = 0; i < ids.length; i += 20) for (const e of await settlement.escrow.getEscrows(ids.slice(i, i + 20))) total += e.balance;
    } catch {
      return { count: ids.length, total: 0n, unavailable: true };
    }
    return { count: ids.length, total, unavailable: false };
  }

  async function tick(): Promise<void> {
    await disputes?.tick();
  }

  return {
    settings,
    disputes,
    isOperator,

    /** Settlement log hook: remembers the last failure of each cycle for the operator view. */
    noteSettlementFailure(message: string, err?: unknown) {
      const m = /settlement of cycle (\d+)/.exec(message);
      if (m) failures.set(m[1]!, { message: err instanceof Error ? err.message : String(err ?? message), at: new Date(now()) });
    },

    /** `POST /v1/disputes` (no account: the proof is the funder's signature). */
    async openDispute(body: unknown) {
      const r = await requireDisputes().open(body);
      return { created: r.created, dispute: disputeView(r.dispute, network) };
    },

    /** `GET /v1/disputes/:escrowId`: a dispute's state, for the caller who opened it. */
    async disputeStatus(escrowId: string) {
      const d = await requireDisputes().get(escrowId);
      if (!d) throw new GatewayError('NOT_FOUND', 'dispute not found');
      return disputeView(d, network);
    },

    async whoami(user: User) {
      return { operator: await isOperator(user), email: user.email };
    },

    async listDisputes(user: User, state: unknown, limit: unknown) {
      await requireOperator(user, 'dispute.list');
      const s = state === undefined ? 'open' : state;
      if (s !== 'open' && s !== 'resolved' && s !== 'all') throw new GatewayError('BAD_REQUEST', 'state must be open, resolved or all');
      const list = await requireDisputes().list(s, intParam(limit, 'limit', 1, 500, 100));
      return list.map((d) => disputeView(d, network));
    },

    async resolveDispute(user: User, escrowId: string, body: unknown) {
      await requireOperator(user, 'dispute.resolve', escrowId);
      const decision = parseDecision(body);
      const detail = decision.action === 'split' ? { resolution: 'split', payer: decision.payer, receiver: decision.receiver } : { resolution: 'refund' };
      const d = await audited(
        user,
        'dispute.resolve',
        escrowId,
        detail,
        () => requireDisputes().resolve(escrowId, decision, user.email),
        (r) => ({ txHash: r.resolveTx, distributions: r.distributions }),
      );
      return disputeView(d, network);
    },

    /** The treasury's on-chain balance against what it owes publishers. */
    async treasury(user: User) {
      await requireOperator(user, 'treasury.view');
      const [bal, owed, escrows, stats, open] = await Promise.all([
        chain.balances(o.treasury.publicKey).catch(() => undefined),
        obligations(),
        escrowBalances(),
        ledger.platformStats(),
        disputes ? disputes.openTotal() : Promise.resolve({ count: 0, amount: 0n }),
      ]);
      const sum = (k: 'owed' | 'toFund' | 'inEscrow') => owed.reduce((s, r) => s + r[k], 0n);
      const balance = bal?.usdc ?? 0n;
      const toFund = sum('toFund');
      return {
        address: o.treasury.publicKey,
        explorer_url: network.explorer.account(o.treasury.publicKey),
        network: network.name,
        status: bal ? (bal.exists ? 'ok' : 'not_created') : 'unavailable',
        balance: money(balance),
        owed_to_publishers: money(sum('owed')),
        to_fund: money(toFund),
        in_escrows: money(sum('inEscrow')),
        escrows_on_chain: { cycles: escrows.count, ...money(escrows.total), unavailable: escrows.unavailable },
        surplus: money(balance - toFund),
        covered: balance >= toFund,
        credits_outstanding: money(stats.credits),
        open_disputes: { count: open.count, ...money(open.amount) },
        publishers: owed.map((r) => ({ owner: r.owner, calls: r.calls, owed: money(r.owed), to_fund: money(r.toFund), in_escrow: money(r.inEscrow) })),
        at: new Date(now()).toISOString(),
      };
    },

    /** Settlement cycles of every publisher, newest first, with failures and whether they are stalled. */
    async settlements(user: User, state: unknown, limit: unknown) {
      await requireOperator(user, 'settlement.list');
      const n = intParam(limit, 'limit', 1, 200, 50);
      const filter = state === undefined || state === '' ? 'all' : String(state);
      const states = ['open', 'closing', 'deployed', 'funded', 'released', 'swept', 'done', 'failed'];
      if (filter !== 'all' && filter !== 'active' && !states.includes(filter))
        throw new GatewayError('BAD_REQUEST', `state must be all, active or one of ${states.join(', ')}`);
      const { rows } = await db.query<{ id: string | number }>(
        `SELECT id FROM settlement_cycles WHERE ($1 = 'all' OR ($1 = 'active' AND state NOT IN ('done', 'open')) OR state = $1) ORDER BY id DESC LIMIT $2`,
        [filter, n],
      );
      const stallAfter = 2 * settlement.settings.fundingIntervalMs;
      const out = [];
      for (const r of rows) {
        const c = await ledger.getCycle(String(r.id));
        const failure = failures.get(c.id);
        const stalled = !['open', 'done'].includes(c.state) && now() - c.updatedAt.getTime() > stallAfter;
        out.push({
          ...settlementView(c, network),
          publisher_owner: c.publisherOwner,
          updated_at: c.updatedAt.toISOString(),
          stalled: c.state === 'failed' || stalled || failure !== undefined,
          last_failure: failure ? { message: failure.message, at: failure.at.toISOString() } : null,
        });
      }
      return out;
    },

    /** Drives an interrupted cycle now (what the next tick would do). */
    async retrySettlement(user: User, cycleId: string) {
      await requireOperator(user, 'settlement.retry', cycleId);
      if (!/^\d{1,18}$/.test(cycleId)) throw new GatewayError('BAD_REQUEST', 'cycle id must be an integer');
      const engine = settlement.engine;
      if (!engine) throw new GatewayError('UNAVAILABLE', 'on-chain settlement is not enabled on this gateway (set TRUSTLESS_WORK_API_KEY)');
      return audited(
        user,
        'settlement.retry',
        cycleId,
        {},
        async () => {
          const before = await ledger.getCycle(cycleId).catch(() => undefined);
          if (!before) throw new GatewayError('NOT_FOUND', 'settlement cycle not found');
          if (before.state === 'done') throw new GatewayError('CONFLICT', `cycle ${cycleId} is done: nothing to retry`);
          if (before.state === 'failed') throw new GatewayError('CONFLICT', `cycle ${cycleId} is marked failed: it needs a manual fix on chain`);
          failures.delete(cycleId);
          await engine.tick();
          const after = await ledger.getCycle(cycleId);
          const failure = failures.get(cycleId);
          return {
            id: after.id,
            from: before.state,
            state: after.state,
            moved: after.state !== before.state,
            error: failure?.message ?? null,
            settlement: settlementView(after, network),
          };
        },
        (r) => ({ from: r.from, to: r.state, error: r.error }),
      );
    },

    /** Platform revenue (the 5% fees) per UTC day, oldest first, with empty days as zeros. */
    async revenue(user: User, days: unknown) {
      await requireOperator(user, 'revenue.view');
      const n = intParam(days, 'days', 1, 365, 30);
      const { rows } = await db.query<Record<string, unknown>>(
        `WITH today AS (SELECT (now() AT TIME ZONE 'UTC')::date AS d),
         series AS (SELECT (SELECT d FROM today) - k AS day FROM generate_series(0, $1::int - 1) AS k),
         agg AS (
           SELECT (created_at AT TIME ZONE 'UTC')::date AS day, count(*) AS calls, sum(gross) AS gross, sum(fee) AS fee
           FROM earnings WHERE reversed_at IS NULL AND created_at >= (((SELECT d FROM today) - ($1::int - 1))::timestamp AT TIME ZONE 'UTC')
           GROUP BY 1
         )
         SELECT to_char(series.day, 'YYYY-MM-DD') AS day, COALESCE(agg.calls, 0) AS calls, COALESCE(agg.gross, 0) AS gross, COALESCE(agg.fee, 0) AS fee
         FROM series LEFT JOIN agg ON agg.day = series.day ORDER BY series.day`,
        [n],
      );
      const points = rows.map((r) => ({ day: String(r.day), calls: Number(r.calls), volume: money(big(r.gross)), revenue: money(big(r.fee)) }));
      const total = rows.reduce((s, r) => s + big(r.fee), 0n);
      return { days: n, total: money(total), points };
    },

    /**
     * The full reconciliation: every wallet-backed credit against its payment
     * on chain, the ledger's audit, and the treasury's USDC against what it
     * owes (credits outstanding plus earnings still to fund).
     */
    async reconciliation(user: User) {
      await requireOperator(user, 'reconciliation.view');
      const [credits, report, bal, owed, stats] = await Promise.all([
        o.walletAudit.audit(),
        ledger.verify(),
        chain.balances(o.treasury.publicKey).catch(() => undefined),
        obligations(),
        ledger.platformStats(),
      ]);
      const balance = bal?.usdc ?? 0n;
      const due = owed.reduce((s, r) => s + r.toFund, 0n) + stats.credits;
      const covered = balance >= due;
      return {
        ok: credits.problems.length === 0 && credits.complete && report.ok && covered,
        wallet_credits: {
          checked: credits.checked,
          complete: credits.complete,
          problems: credits.problems.map((p) => ({
            tx_hash: p.txHash,
            account_id: p.accountId,
            payment_id: p.paymentId,
            amount: money(p.amount),
            problem: p.problem,
          })),
        },
        ledger: { ok: report.ok, mismatches: report.mismatches },
        treasury: { balance: money(balance), owed: money(due), covered, status: bal ? (bal.exists ? 'ok' : 'not_created') : 'unavailable' },
        at: new Date(now()).toISOString(),
      };
    },

    async audit(user: User, limit: unknown) {
      await requireOperator(user, 'audit.view');
      const list = await listAudit(db, intParam(limit, 'limit', 1, 1000, 100));
      return list.map((e) => ({ id: e.id, at: e.at.toISOString(), actor: e.actor, action: e.action, target: e.target, outcome: e.outcome, detail: e.detail }));
    },

    tick,
    start() {
      if (timer || !disputes) return;
      timer = setInterval(() => {
        ticking ??= tick()
          .catch((err) => o.log('dispute tick failed', err))
          .finally(() => {
            ticking = undefined;
          });
      }, settings.disputeIntervalMs);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await ticking;
    },
  };
}

export type Operator = ReturnType<typeof createOperator>;
export { createDisputes, disputeView };
export type { Decision, Disputes };
export type { Dispute } from './disputes.js';
export { verifyDisputeProof, DISPUTE_PROOF_DATA_NAME, DISPUTE_PROOF_MAX_WINDOW_S } from './proof.js';
export { grantOperator, revokeOperator, listOperators, isOperatorAccount, parseOperatorList, normalizeEmail } from './roles.js';
export { writeAudit, listAudit } from './audit.js';
export type { AuditEntry, AuditInput } from './audit.js';
