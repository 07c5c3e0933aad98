import { isValidStrKey } from '@farebox/protocol';
import type { NetworkConfig } from '@farebox/stellar';
import { Account, BASE_FEE, Operation, TransactionBuilder } from '@stellar/stellar-sdk';
import { z } from 'zod';
import { ClientError } from '../errors.js';
import { requireSigner, type DirectContext } from './context.js';
import { errorText, serverMessage } from './http.js';
import type { DisputeResult } from './types.js';

/** Name of the dispute proof's manageData operation (docs/operator.md). */
const DISPUTE_PROOF_DATA_NAME = 'farebox_dispute';
const DisputeBodySchema = z.looseObject({
  escrow_id: z.string(),
  state: z.enum(['open', 'resolved']),
  dispute_tx: z.string().nullable().optional(),
  dispute_explorer_url: z.string().nullable().optional(),
  resolution: z.enum(['refund', 'split']).nullable().optional(),
  resolve_tx: z.string().nullable().optional(),
  resolve_explorer_url: z.string().nullable().optional(),
  distributions: z
    .array(z.looseObject({ address: z.string(), base_units: z.union([z.number().int(), z.string().regex(/^\d+$/)]) }))
    .nullable()
    .optional(),
  error: z.string().nullable().optional(),
});

function disputeResult(net: NetworkConfig, json: unknown, escrowId: string): DisputeResult {
  const parsed = DisputeBodySchema.safeParse(json);
  if (!parsed.success || parsed.data.escrow_id !== escrowId)
    throw new ClientError('BAD_RESPONSE', `the platform answered the dispute of ${escrowId} with an unexpected body`, { escrowId });
  const d = parsed.data;
  return {
    escrowId,
    state: d.state,
    ...(d.dispute_tx ? { txHash: d.dispute_tx, explorerUrl: d.dispute_explorer_url ?? net.explorer.tx(d.dispute_tx) } : {}),
    ...(d.resolution ? { resolution: d.resolution } : {}),
    ...(d.resolve_tx ? { resolveTx: d.resolve_tx, resolveExplorerUrl: d.resolve_explorer_url ?? net.explorer.tx(d.resolve_tx) } : {}),
    ...(d.distributions ? { distributions: d.distributions.map((x) => ({ address: x.address, amount: BigInt(x.base_units) })) } : {}),
    ...(d.error ? { error: d.error } : {}),
  };
}

/** `FareboxClient.dispute`: a proof signed by the funder's key goes to the platform's `POST /v1/disputes`. */
export async function openDispute(ctx: DirectContext, escrowId: string, disputeOptions: { reason?: string } = {}): Promise<DisputeResult> {
  const { net, request } = ctx;
  const who = requireSigner(ctx);
  if (!isValidStrKey('contract', escrowId)) throw new ClientError('CONFIG', 'escrowId must be a C... contract id');
  if (disputeOptions.reason !== undefined && (typeof disputeOptions.reason !== 'string' || disputeOptions.reason.length > 500))
    throw new ClientError('CONFIG', 'reason must be a string of at most 500 characters');
  const base = ctx.platformUrl('dispute');
  // The proof: a transaction that can never be applied (sequence 0), one manageData naming the escrow, signed by the funder.
  const nowS = Math.floor(Date.now() / 1000);
  const unsigned = new TransactionBuilder(new Account(who.publicKey, '-1'), { fee: BASE_FEE, networkPassphrase: net.passphrase })
    .addOperation(Operation.manageData({ name: DISPUTE_PROOF_DATA_NAME, value: escrowId }))
    .setTimebounds(nowS - 30, nowS + 300)
    .build()
    .toXDR();
  let proof: string;
  try {
    proof = await who.signTransaction(unsigned, net.passphrase);
  } catch (e) {
    throw new ClientError('CONFIG', `the signer refused to sign the dispute proof: ${errorText(e)}`, { escrowId });
  }
  const answer = await request(`${base}/v1/disputes`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ escrowId, proof, ...(disputeOptions.reason !== undefined ? { reason: disputeOptions.reason } : {}) }),
  });
  if (answer.status !== 200 && answer.status !== 201) {
    const msg = serverMessage(answer.json, answer.text);
    throw new ClientError('ESCROW', `dispute of escrow ${escrowId} refused by the platform (HTTP ${answer.status}): ${msg}`, {
      escrowId,
      status: answer.status,
      serverMessage: msg,
    });
  }
  return disputeResult(net, answer.json, escrowId);
}

/** `FareboxClient.getDispute`: the platform's record of a dispute, undefined when there is none. */
export async function readDispute(ctx: DirectContext, escrowId: string): Promise<DisputeResult | undefined> {
  if (!isValidStrKey('contract', escrowId)) throw new ClientError('CONFIG', 'escrowId must be a C... contract id');
  const answer = await ctx.request(`${ctx.platformUrl('dispute status')}/v1/disputes/${escrowId}`, { method: 'GET' });
  if (answer.status === 404) return undefined;
  if (answer.status !== 200)
    throw new ClientError('BAD_RESPONSE', `dispute status: HTTP ${answer.status}: ${serverMessage(answer.json, answer.text)}`, {
      escrowId,
      status: answer.status,
    });
  return disputeResult(ctx.net, answer.json, escrowId);
}
