import { inputs } from '@farebox/contract';
import { nativeToScVal, rpc, scValToNative } from '@stellar/stellar-sdk';
import type { Escrow, EscrowClient } from '@farebox/escrow';
import { amountFields, isValidStrKey, toJsonInteger } from '@farebox/protocol';
import type { NetworkConfig, TxSigner } from '@farebox/stellar';
import type { Db } from '../db.js';
import { GatewayError } from '../errors.js';
import type { TreasuryQueue } from '../runtime/treasury-queue.js';
import { KeyedMutex } from '../settlement/lock.js';
import { createStepRunner, type ChainProbe, type PendingTx } from '../settlement/onchain.js';
import { emitEvent } from '../webhooks/events.js';
import { writeAudit } from './audit.js';
import { verifyDisputeProof } from './proof.js';
import { systemClock } from '../clock.js';

/** A dispute on a direct escrow, as the gateway records it. */
export interface Dispute {
  escrowId: string;
  state: 'open' | 'resolved';
  funders: Array<{ address: string; amount: bigint }>;
  requestedBy: string;
  receiver: string;
  engagementId: string;
  /** The escrow's balance when the dispute was opened, base units. */
  amount: bigint;
  reason: string;
  /** The service marked the milestone done (it served) before the dispute. */
  served: boolean;
  escrowCreatedAt: Date | null;
  disputeTx: string | null;
  distributions: Array<{ address: string; amount: bigint }> | null;
  resolution: 'refund' | 'split' | null;
  resolveTx: string | null;
  resolvedBy: string | null;
  resolvedAt: Date | null;
  error: string | null;
  openedAt: Date;
}

/** How an operator resolves: everything back to the funders, or a split between the payer and the service's receiver. */
export type Decision = { action: 'refund' } | { action: 'split'; payer: bigint; receiver: bigint };

export interface DisputesOptions {
  db: Db;
  escrow: EscrowClient;
  probe: ChainProbe;
  network: NetworkConfig;
  treasury: TxSigner;
  /** Automatic policy: a funded escrow that was never served and is older than this is refunded in full; null turns it off. */
  autoRefundAfterMs: number | null;
  /** The gateway's one queue of treasury transactions (they share its sequence number). */
  treasuryQueue: TreasuryQueue;
  log(message: string, err?: unknown): void;
  now?: () => number;
}

/** The contract's body (@farebox/contract), plus the checksum of the escrow's contract id (protocol's strkey). */
const OpenSchema = inputs.OpenDisputeBody.superRefine((b, ctx) => {
  if (!isValidStrKey('contract', b.escrowId)) ctx.addIssue({ code: 'custom', path: ['escrowId'], message: 'escrowId must be a C... contract id' });
});

type Row = {
  escrow_id: string;
  state: 'open' | 'resolved';
  funders: unknown;
  requested_by: string;
  receiver: string;
  engagement_id: string;
  amount: string | number;
  reason: string;
  served: boolean;
  escrow_created_at: Date | string | null;
  dispute_tx: string | null;
  pending: unknown;
  distributions: unknown;
  resolution: 'refund' | 'split' | null;
  resolve_tx: string | null;
  resolved_by: string | null;
  resolved_at: Date | string | null;
  error: string | null;
  opened_at: Date | string;
};

const obj = (v: unknown): unknown => (typeof v === 'string' ? JSON.parse(v) : v);
const amounts = (v: unknown): Array<{ address: string; amount: bigint }> =>
  (obj(v) as Array<{ address: string; amount: string }>).map((d) => ({ address: d.address, amount: BigInt(d.amount) }));
const stored = (list: Array<{ address: string; amount: bigint }>) => JSON.stringify(list.map((d) => ({ address: d.address, amount: d.amount.toString() })));

function toDispute(r: Row): Dispute {
  return {
    escrowId: r.escrow_id,
    state: r.state,
    funders: amounts(r.funders),
    requestedBy: r.requested_by,
    receiver: r.receiver,
    engagementId: r.engagement_id,
    amount: BigInt(r.amount),
    reason: r.reason,
    served: r.served,
    escrowCreatedAt: r.escrow_created_at ? new Date(r.escrow_created_at) : null,
    disputeTx: r.dispute_tx,
    distributions: r.distributions ? amounts(r.distributions) : null,
    resolution: r.resolution,
    resolveTx: r.resolve_tx,
    resolvedBy: r.resolved_by,
    resolvedAt: r.resolved_at ? new Date(r.resolved_at) : null,
    error: r.error,
    openedAt: new Date(r.opened_at),
  };
}

/** JSON shape of a dispute (amounts with base units, USD and explorer links). */
export function disputeView(d: Dispute, network: NetworkConfig) {
  return {
    escrow_id: d.escrowId,
    state: d.state,
    served: d.served,
    reason: d.reason,
    requested_by: d.requestedBy,
    receiver: d.receiver,
    engagement_id: d.engagementId,
    ...amountFields('amount', d.amount),
    funders: d.funders.map((f) => ({ address: f.address, base_units: toJsonInteger(f.amount) })),
    opened_at: d.openedAt.toISOString(),
    escrow_created_at: d.escrowCreatedAt?.toISOString() ?? null,
    dispute_tx: d.disputeTx,
    dispute_explorer_url: d.disputeTx ? network.explorer.tx(d.disputeTx) : null,
    resolution: d.resolution,
    distributions: d.distributions?.map((x) => ({ address: x.address, base_units: toJsonInteger(x.amount) })) ?? null,
    resolve_tx: d.resolveTx,
    resolve_explorer_url: d.resolveTx ? network.explorer.tx(d.resolveTx) : null,
    resolved_by: d.resolvedBy,
    resolved_at: d.resolvedAt?.toISOString() ?? null,
    error: d.error,
    escrow_explorer_url: network.explorer.contract(d.escrowId),
  };
}

/**
 * Disputes on direct escrows (escrows opened by `@farebox/client` name the
 * platform treasury as platform address and dispute resolver). The funder
 * asks with a signed proof; the treasury disputes the escrow on chain and
 * resolves it through the escrow provider's resolve-dispute operation, either
 * by the automatic policy (never served and old enough: full refund) or by an
 * operator (refund or split, summing exactly to the balance).
 */
export function createDisputes(o: DisputesOptions) {
  const { db, escrow, network, treasury } = o;
  const now = o.now ?? systemClock;
  const server = new rpc.Server(network.rpcUrl, { allowHttp: network.allowHttp });
  const execute = createStepRunner({ escrow, probe: o.probe, passphrase: network.passphrase, now });
  const perEscrow = new KeyedMutex();
  /** Runs `fn` in a transaction where the database has them: a dispute's record and its webhook events commit together. */
  const atomically = <T>(fn: (q: Db) => Promise<T>): Promise<T> => {
    const tx = (db as { transaction?: <U>(f: (q: Db) => Promise<U>) => Promise<U> }).transaction;
    return tx ? (tx.call(db, fn) as Promise<T>) : fn(db);
  };
  /** `dispute.opened` / `dispute.resolved` to the accounts whose wallets are the escrow's receiver and its funder (webhooks/events.ts). */
  async function notify(q: Db, type: 'dispute.opened' | 'dispute.resolved', d: Dispute): Promise<void> {
    const dispute = disputeView(d, network);
    await emitEvent(q, { wallet: d.receiver }, type, { role: 'receiver', dispute }, { now });
    if (d.requestedBy !== d.receiver) await emitEvent(q, { wallet: d.requestedBy }, type, { role: 'funder', dispute }, { now });
  }
  const FUND_TOPIC = nativeToScVal('tw_fund', { type: 'symbol' }).toXDR('base64');

  async function get(escrowId: string): Promise<Dispute | undefined> {
    const { rows } = await db.query<Row>('SELECT * FROM gw_disputes WHERE escrow_id = $1', [escrowId]);
    return rows[0] ? toDispute(rows[0]) : undefined;
  }

  async function pendingOf(escrowId: string): Promise<PendingTx | undefined> {
    const { rows } = await db.query<{ pending: unknown }>('SELECT pending FROM gw_disputes WHERE escrow_id = $1', [escrowId]);
    const p = rows[0]?.pending ? (obj(rows[0].pending) as PendingTx | null) : null;
    return p && typeof p.hash === 'string' ? p : undefined;
  }

  async function readEscrow(escrowId: string): Promise<Escrow> {
    let found: Escrow | undefined;
    try {
      [found] = await escrow.getEscrows([escrowId]);
    } catch (e) {
      if (e instanceof Error && /not found/i.test(e.message)) found = undefined;
      else throw new GatewayError('UPSTREAM', `escrow provider: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (!found || found.contractId !== escrowId) throw new GatewayError('NOT_FOUND', 'escrow not found');
    return found;
  }

  /** Who paid into the escrow and how much: its `tw_fund` events (topic: signer, value: amount). */
  async function fundersOf(escrowId: string): Promise<Array<{ address: string; amount: bigint }>> {
    const filters = [{ type: 'contract' as const, contractIds: [escrowId], topics: [[FUND_TOPIC, '*']] }];
    const health = await server.getHealth();
    const totals = new Map<string, bigint>();
    let res = await server.getEvents({ filters, startLedger: health.oldestLedger, limit: 200 });
    for (let page = 0; page < 50; page++) {
      for (const e of res.events) {
        const who = scValToNative(e.topic[1]!) as unknown;
        const amount = scValToNative(e.value) as unknown;
        if (typeof who !== 'string' || typeof amount !== 'bigint') continue;
        totals.set(who, (totals.get(who) ?? 0n) + amount);
      }
      if (res.events.length < 200) break;
      res = await server.getEvents({ filters, cursor: res.cursor, limit: 200 });
    }
    return [...totals].map(([address, amount]) => ({ address, amount }));
  }

  const servedOf = (e: Escrow) => e.milestones.some((m) => m.approved || (m.status !== 'pending' && m.status !== ''));

  async function treasuryRun(op: 'disputeEscrow', input: { contractId: string; signer: string }): Promise<string> {
    return o.treasuryQueue.run(`dispute of escrow ${input.contractId}`, async () => (await escrow.run(op, input, treasury)).txHash);
  }

  /** Puts the escrow in dispute on chain (signed by the treasury as platform party); idempotent. */
  async function disputeOnChain(d: Dispute): Promise<void> {
    const e = await readEscrow(d.escrowId);
    if (e.flags.disputed || e.flags.resolved) return;
    const txHash = await treasuryRun('disputeEscrow', { contractId: d.escrowId, signer: treasury.publicKey });
    await db.query('UPDATE gw_disputes SET dispute_tx = $2, error = NULL, updated_at = now() WHERE escrow_id = $1', [d.escrowId, txHash]);
  }

  function distributionsFor(d: Dispute, balance: bigint, decision: Decision): Array<{ address: string; amount: bigint }> {
    if (balance <= 0n) throw new GatewayError('CONFLICT', `escrow ${d.escrowId} holds nothing to distribute`);
    if (decision.action === 'refund') {
      const funded = d.funders.reduce((s, f) => s + f.amount, 0n);
      if (d.funders.length === 1 || funded !== balance) {
        if (d.funders.length !== 1)
          throw new GatewayError('CONFLICT', `escrow ${d.escrowId} has several funders and its balance differs from what they paid: resolve it with a split`);
        return [{ address: d.funders[0]!.address, amount: balance }];
      }
      return d.funders.filter((f) => f.amount > 0n).map((f) => ({ ...f }));
    }
    if (decision.payer < 0n || decision.receiver < 0n) throw new GatewayError('BAD_REQUEST', 'split amounts must not be negative');
    if (decision.payer + decision.receiver !== balance) {
      throw new GatewayError(
        'BAD_REQUEST',
        `the split must sum exactly to the escrow balance: ${decision.payer} + ${decision.receiver} = ${decision.payer + decision.receiver} base units, the balance is ${balance}`,
      );
    }
    // Each distribution must be positive on chain: a zero share is left out. One address may appear once.
    const byAddress = new Map<string, bigint>();
    for (const [address, amount] of [
      [d.requestedBy, decision.payer],
      [d.receiver, decision.receiver],
    ] as const)
      if (amount > 0n) byAddress.set(address, (byAddress.get(address) ?? 0n) + amount);
    return [...byAddress].map(([address, amount]) => ({ address, amount }));
  }

  /**
   * Resolves through the escrow provider's resolve-dispute, exactly once: the
   * signed transaction and its hash are recorded before submission; a retry
   * asks the chain first (see the settlement engine's rule).
   */
  async function resolve(escrowId: string, decision: Decision, actor: string): Promise<Dispute> {
    return perEscrow.run(escrowId, async () => {
      const d = await get(escrowId);
      if (!d) throw new GatewayError('NOT_FOUND', 'dispute not found');
      if (d.state === 'resolved') throw new GatewayError('CONFLICT', 'dispute already resolved');
      const pending = await pendingOf(escrowId);
      let e = await readEscrow(escrowId);
      let list: Array<{ address: string; amount: bigint }>;
      if (e.flags.resolved && pending) {
        // Resolved on chain by our recorded transaction before a crash: record it.
        list = d.distributions ?? [];
      } else {
        if (e.flags.released) throw new GatewayError('CONFLICT', `escrow ${escrowId} was released to the service: nothing to resolve`);
        if (e.flags.resolved) throw new GatewayError('CONFLICT', `escrow ${escrowId} was resolved outside this gateway`);
        list = distributionsFor(d, e.balance, decision);
        if (!e.flags.disputed) {
          await disputeOnChain(d);
          e = await readEscrow(escrowId);
        }
        await db.query('UPDATE gw_disputes SET distributions = $2::jsonb, resolution = $3, updated_at = now() WHERE escrow_id = $1', [
          escrowId,
          stored(list),
          decision.action,
        ]);
      }
      const out = await o.treasuryQueue.run(`resolution of escrow ${escrowId}`, () =>
        execute({
          step: 'resolve',
          pending,
          build: () => escrow.resolveDispute({ contractId: escrowId, disputeResolver: treasury.publicKey, distributions: list }),
          signer: treasury,
          persist: async (p) => {
            await db.query('UPDATE gw_disputes SET pending = $2::jsonb, updated_at = now() WHERE escrow_id = $1', [escrowId, JSON.stringify(p)]);
          },
        }),
      );
      const { rows } = await atomically(async (q) => {
        const r = await q.query<Row>(
          `UPDATE gw_disputes SET state = 'resolved', resolve_tx = $2, resolved_by = $3, resolved_at = now(), pending = NULL, error = NULL, updated_at = now()
           WHERE escrow_id = $1 AND state = 'open' RETURNING *`,
          [escrowId, out.hash, actor],
        );
        if (r.rows[0]) await notify(q, 'dispute.resolved', toDispute(r.rows[0]));
        return r;
      });
      const resolved = rows[0] ? toDispute(rows[0]) : (await get(escrowId))!;
      return resolved;
    });
  }

  function autoEligible(d: Dispute): boolean {
    if (o.autoRefundAfterMs === null || d.state !== 'open' || d.served) return false;
    const since = (d.escrowCreatedAt ?? d.openedAt).getTime();
    return now() - since >= o.autoRefundAfterMs;
  }

  async function autoResolve(d: Dispute): Promise<Dispute> {
    if (!autoEligible(d)) return d;
    try {
      const r = await resolve(d.escrowId, { action: 'refund' }, 'policy:auto-refund');
      await writeAudit(db, {
        actor: 'policy:auto-refund',
        action: 'dispute.resolve',
        target: d.escrowId,
        outcome: 'ok',
        detail: { resolution: 'refund', distributions: r.distributions, txHash: r.resolveTx },
      });
      return r;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      await db.query('UPDATE gw_disputes SET error = $2, updated_at = now() WHERE escrow_id = $1', [d.escrowId, message.slice(0, 500)]);
      await writeAudit(db, { actor: 'policy:auto-refund', action: 'dispute.resolve', target: d.escrowId, outcome: 'failed', detail: { error: message } });
      o.log(`automatic refund of escrow ${d.escrowId} failed (retried on the next tick)`, err);
      return (await get(d.escrowId)) ?? d;
    }
  }

  return {
    get,
    fundersOf,

    /** `POST /v1/disputes`: the escrow's funder asks the platform to dispute it. Idempotent per escrow. */
    async open(body: unknown): Promise<{ created: boolean; dispute: Dispute }> {
      const parsed = OpenSchema.safeParse(body ?? {});
      if (!parsed.success) throw new GatewayError('BAD_REQUEST', parsed.error.issues[0]?.message ?? 'invalid input');
      const { escrowId, proof, reason } = parsed.data;
      const signer = verifyDisputeProof(proof, network.passphrase, escrowId, now());
      const existing = await get(escrowId);
      if (existing) {
        if (!existing.funders.some((f) => f.address === signer)) throw new GatewayError('FORBIDDEN', 'only a funder of the escrow can dispute it');
        return { created: false, dispute: existing };
      }
      const e = await readEscrow(escrowId);
      if (e.roles.disputeResolver !== treasury.publicKey)
        throw new GatewayError(
          'CONFLICT',
          `escrow ${escrowId} names ${e.roles.disputeResolver} as dispute resolver, not this platform (${treasury.publicKey})`,
        );
      if (e.roles.platformAddress !== treasury.publicKey)
        throw new GatewayError('CONFLICT', `escrow ${escrowId} names ${e.roles.platformAddress} as platform, not this platform (${treasury.publicKey})`);
      if (e.flags.released) throw new GatewayError('CONFLICT', `escrow ${escrowId} was already released: the service was paid`);
      if (e.flags.resolved) throw new GatewayError('CONFLICT', `escrow ${escrowId} was already resolved`);
      if (e.balance <= 0n) throw new GatewayError('CONFLICT', `escrow ${escrowId} holds no funds`);
      const funders = await fundersOf(escrowId).catch((err: unknown) => {
        throw new GatewayError('UPSTREAM', `cannot read the escrow's funding from the chain: ${err instanceof Error ? err.message : String(err)}`);
      });
      if (!funders.some((f) => f.address === signer)) throw new GatewayError('FORBIDDEN', 'only a funder of the escrow can dispute it');
      const { rows } = await atomically(async (q) => {
        const r = await q.query<Row>(
          `INSERT INTO gw_disputes (escrow_id, funders, requested_by, receiver, engagement_id, amount, reason, served, escrow_created_at)
           VALUES ($1, $2::jsonb, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (escrow_id) DO NOTHING RETURNING *`,
          [
            escrowId,
            stored(funders),
            signer,
            e.roles.receiver,
            e.engagementId,
            e.balance.toString(),
            reason ?? '',
            servedOf(e),
            e.createdAt ? new Date(e.createdAt) : null,
          ],
        );
        if (r.rows[0]) await notify(q, 'dispute.opened', toDispute(r.rows[0]));
        return r;
      });
      if (!rows[0]) return { created: false, dispute: (await get(escrowId))! };
      let d = toDispute(rows[0]);
      await writeAudit(db, {
        actor: `funder:${signer}`,
        action: 'dispute.open',
        target: escrowId,
        outcome: 'ok',
        detail: { amount: e.balance, served: d.served, reason: reason ?? '' },
      });
      try {
        await disputeOnChain(d);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        await db.query('UPDATE gw_disputes SET error = $2, updated_at = now() WHERE escrow_id = $1', [
          escrowId,
          `dispute on chain failed (retried): ${message}`.slice(0, 500),
        ]);
        o.log(`disputing escrow ${escrowId} on chain failed (retried on the next tick)`, err);
      }
      d = (await get(escrowId))!;
      return { created: true, dispute: await autoResolve(d) };
    },

    resolve,

    async list(state: 'open' | 'resolved' | 'all', limit: number): Promise<Dispute[]> {
      const { rows } = await db.query<Row>(`SELECT * FROM gw_disputes WHERE ($1 = 'all' OR state = $1) ORDER BY opened_at DESC, escrow_id LIMIT $2`, [
        state,
        limit,
      ]);
      return rows.map(toDispute);
    },

    /** Open disputes: retry the on-chain dispute where it failed, and apply the automatic policy. */
    async tick(): Promise<void> {
      const { rows } = await db.query<Row>(`SELECT * FROM gw_disputes WHERE state = 'open' ORDER BY opened_at LIMIT 100`);
      for (const d of rows.map(toDispute)) {
        try {
          if (!d.disputeTx) await perEscrow.run(d.escrowId, () => disputeOnChain(d));
          await autoResolve(d);
        } catch (err) {
          o.log(`dispute of escrow ${d.escrowId}: retry failed`, err);
        }
      }
    },

    /** Base units held by escrows with an open dispute. */
    async openTotal(): Promise<{ count: number; amount: bigint }> {
      const { rows } = await db.query<{ n: string | number; s: string | number | null }>(
        `SELECT count(*) AS n, COALESCE(sum(amount), 0) AS s FROM gw_disputes WHERE state = 'open'`,
      );
      return { count: Number(rows[0]?.n ?? 0), amount: BigInt(rows[0]?.s ?? 0) };
    },
  };
}

export type Disputes = ReturnType<typeof createDisputes>;
