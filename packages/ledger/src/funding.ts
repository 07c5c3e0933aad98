import type { Database } from './db.js';
import { LedgerError } from './errors.js';
import { text, toBatch } from './rows.js';
import { cycleIdParam, lockClaimable } from './settlement.js';
import type { FundingBatch } from './types.js';

// Funding batches: a cycle's claimed earnings fixed into a batch before the on-chain funding, then confirmed.

export async function prepareFunding(db: Database, cycleId: string): Promise<FundingBatch | null> {
  const id = cycleIdParam(cycleId);
  return db.transaction(async (tx) => {
    await lockClaimable(tx, id, cycleId);
    // One statement: the earnings picked, the batch of their sum and each
    // earning's batch, without sending every earning to this process and back.
    const { rows } = await tx.query(
      `WITH picked AS (
         SELECT id, gross FROM earnings WHERE cycle_id = $1 AND funding_batch_id IS NULL ORDER BY id FOR UPDATE SKIP LOCKED
       ), batch AS (
         INSERT INTO funding_batches (cycle_id, amount)
         SELECT $1, sum(gross) FROM picked HAVING count(*) > 0
         RETURNING *
       ), assigned AS (
         UPDATE earnings SET funding_batch_id = batch.id FROM batch, picked WHERE earnings.id = picked.id
       )
       SELECT * FROM batch`,
      [id],
    );
    return rows[0] ? toBatch(rows[0]) : null;
  });
}

export async function confirmFunding(
  db: Database,
  batchId: string,
  data: { txHash: string; explorerUrl?: string },
): Promise<{ applied: boolean; batch: FundingBatch }> {
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
