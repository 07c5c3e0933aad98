import { PLATFORM_FEE_PCT, costObject, splitFee } from '@farebox/protocol';
import type { CycleState, SettlementCycle } from '@farebox/ledger';
import type { NetworkConfig } from '@farebox/stellar';

/** An amount as `{ lamports, base_units, usd }`. */
export interface CostView {
  lamports: number;
  base_units: number;
  usd: number;
}

/** One settlement batch of `GET /v1/publisher/settlements`. */
export interface SettlementView {
  id: string;
  state: CycleState;
  escrow_id: string | null;
  escrow_url: string | null;
  receiver: string;
  calls: number;
  fee: CostView & { pct: number };
  gross: CostView;
  net: CostView;
  funded: CostView;
  paid: CostView;
  opened_at: string;
  closed_at: string | null;
  settled_at: string | null;
  error: string | null;
  transactions: Array<{ step: string; tx_hash: string; explorer_url: string } & Record<string, unknown>>;
  steps: Array<{ from: CycleState; to: CycleState; tx_hash: string | null; at: string }>;
}

/**
 * A settlement batch of `GET /v1/publisher/settlements`: one cycle of one
 * publisher owner. `gross` is what the calls earned (and what the treasury
 * funded); `fee` and `net` are what the escrow pays at release on that total:
 * fee = floor(gross x 5 / 100), net = gross - fee.
 */
export function settlementView(c: SettlementCycle, network: NetworkConfig): SettlementView {
  const { fee, net } = splitFee(c.gross);
  const tx = (step: string, hash: string | null | undefined, extra: Record<string, unknown> = {}) =>
    hash ? [{ step, tx_hash: hash, explorer_url: network.explorer.tx(hash), ...extra }] : [];
  const data = c.data as Record<string, unknown>;
  const str = (k: string) => (typeof data[k] === 'string' ? (data[k] as string) : undefined);
  const paid = c.state === 'swept' || c.state === 'done';
  return {
    id: c.id,
    state: c.state,
    escrow_id: c.escrowId,
    escrow_url: c.escrowId ? network.explorer.contract(c.escrowId) : null,
    receiver: c.publisherOwner,
    calls: c.calls,
    fee: { pct: PLATFORM_FEE_PCT, ...costObject(fee) },
    gross: costObject(c.gross),
    net: costObject(net),
    funded: costObject(c.funded),
    paid: paid ? costObject(net) : costObject(0n),
    opened_at: c.openedAt.toISOString(),
    closed_at: c.closedAt?.toISOString() ?? null,
    settled_at: paid ? (c.steps.find((s) => s.toState === 'swept')?.createdAt.toISOString() ?? null) : null,
    error: c.error,
    transactions: [
      ...tx('deploy', str('deployTx')),
      ...c.batches.flatMap((b) => tx('fund', b.txHash, { ...costObject(b.amount), batch_id: b.id })),
      ...tx('complete', str('completeTx')),
      ...tx('approve', str('approveTx')),
      ...tx('release', str('releaseTx')),
      ...tx('sweep', str('sweepTx')),
    ],
    steps: c.steps.map((s) => ({ from: s.fromState, to: s.toState, tx_hash: s.txHash, at: s.createdAt.toISOString() })),
  };
}
