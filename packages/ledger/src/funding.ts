import type { Database } from './db.js';
import { LedgerError } from './errors.js';
import { big, str, text, toBatch, type Row } from './rows.js';
import { cycleIdParam, lockClaimable } from './settlement.js';
import type { FundingBatch } from './types.js';

// Funding batches: a cycle's claimed earnings fixed into a batch before the on-chain funding, then confirmed.

export async function prepareFunding(db: Database, cycleId: string): Promise<FundingBatch | null> {
  const id = cycleIdParam(cycleId);
  return db.transaction(async (tx) => {
    await lockClaimable(tx, id, cycleId);
    const picked = await tx.query(
      'SELECT id, gross FROM earnings WHERE cycle_id = $1 AND funding_batch_id IS NULL ORDER BY id FOR UPDATE SKIP LOCKED',
      [id],
    );
    if (picked.rows.length === 0) return null;
    const amount = picked.rows.reduce((s, r) => s + big(r.gross), 0n);
    const { rows } = await tx.query('INSERT INTO funding_batches (cycle_id, amount) VALUES ($1, $2::bigint) RETURNING *', [id, amount.toString()]);
    const batch = toBatch(rows[0] as Row);
    await tx.query('UPDATE earnings SET funding_batch_id = $1 WHERE id = ANY($2::bigint[])', [batch.id, picked.rows.map((r) => str(r.id))]);
    return batch;
  });
}

export async function confirmFunding(db: Database, batchId: string, data: { txHash: string; explorerUrl?: string }): Promise<{ applied: boolean; batch: FundingBatch }> {
  if (!/^\d{1,18}$/.test(String(batchId))) throw new LedgerError('FUNDING_BATCH_NOT_FOUND', 'funding batch not found', { batchId });
  const txHash = text(data?.txHash, 'txHash');
  const explorerUrl = data.explorerUrl === undefined ? null : text(data.explorerUrl, 'explorerUrl', 2048);
  const { rows } = await db.query(
    `UPDATE funding_batches SET state = 'confirmed', tx_hash = $2, explorer_url = $3, confirmed_at = now()
     WHERE id = $1 AND state = 'prepared' RETURNING *`,
    [batchId, txHash, explorerUrl],
  );
  if (rows[0]) return { applied: true, batch: toBatch(rows[0]) };
  const current = await db.query('SELECT * FROM funding_batches WHERE id = $1', [batchId]);
  if (!current.rows[0]) throw new LedgerError('FUNDING_BATCH_NOT_FOUND', 'funding batch not found', { batchId });
  return { applied: false, batch: toBatch(current.rows[0]) };
}
