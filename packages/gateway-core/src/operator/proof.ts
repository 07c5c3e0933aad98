import { Keypair, StrKey, TransactionBuilder, type Transaction } from '@stellar/stellar-sdk';
import { systemClock } from '../clock.js';
import { GatewayError } from '../errors.js';

/**
 * The name of the one `manageData` operation of a dispute proof. The proof is
 * a Stellar transaction that can never be applied (sequence number 0, like a
 * SEP-10 challenge): source = the escrow's funder, one `manageData`
 * `farebox_dispute` = the escrow id, time bounds of at most 15 minutes that
 * include now, signed by the funder. Any Stellar wallet can sign it.
 */
export const DISPUTE_PROOF_DATA_NAME = 'farebox_dispute';
/** Longest validity window of a proof, seconds. */
export const DISPUTE_PROOF_MAX_WINDOW_S = 900;

const refuse = (message: string) => new GatewayError('BAD_REQUEST', `invalid dispute proof: ${message}`);

/**
 * Checks a dispute proof for `escrowId` and returns the funder's public key
 * that signed it. Throws `BAD_REQUEST` naming what is wrong.
 */
export function verifyDisputeProof(proofXdr: string, passphrase: string, escrowId: string, nowMs = systemClock()): string {
  let tx: Transaction;
  try {
    const parsed = TransactionBuilder.fromXDR(proofXdr, passphrase);
    if ('innerTransaction' in parsed) throw refuse('a fee-bump transaction is not a proof');
    tx = parsed;
  } catch (e) {
    if (e instanceof GatewayError) throw e;
    throw refuse('not a base64 transaction envelope');
  }
  const source = tx.source;
  if (!StrKey.isValidEd25519PublicKey(source)) throw refuse('the source must be a G... account');
  if (tx.sequence !== '0') throw refuse('the sequence number must be 0 (a proof can never be applied)');
  if (tx.operations.length !== 1) throw refuse('exactly one operation expected');
  const op = tx.operations[0]!;
  if (op.type !== 'manageData' || op.name !== DISPUTE_PROOF_DATA_NAME) throw refuse(`the operation must be manageData "${DISPUTE_PROOF_DATA_NAME}"`);
  if (op.source !== undefined && op.source !== source) throw refuse('the operation must not have its own source');
  const value = op.value ? Buffer.from(op.value).toString('utf8') : '';
  if (value !== escrowId) throw refuse('it is for another escrow');
  const min = Number(tx.timeBounds?.minTime ?? '0');
  const max = Number(tx.timeBounds?.maxTime ?? '0');
  const now = Math.floor(nowMs / 1000);
  if (!max || max - min > DISPUTE_PROOF_MAX_WINDOW_S) throw refuse(`time bounds of at most ${DISPUTE_PROOF_MAX_WINDOW_S} s are required`);
  if (now + 60 < min || now > max) throw refuse('expired or not yet valid');
  const key = Keypair.fromPublicKey(source);
  const hash = tx.hash();
  const signed = tx.signatures.some((s) => s.hint().equals(key.signatureHint()) && key.verify(hash, s.signature()));
  if (!signed) throw refuse(`not signed by ${source}`);
  return source;
}
