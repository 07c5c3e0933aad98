import { xdr } from '@stellar/stellar-sdk';
import type { ResultCodes } from './errors.js';

// Horizon's spelling of result codes, for the XDR names that do not follow the
// general rule (tx: camelCase -> snake_case; op: drop the operation prefix).
const TX_SPECIAL: Record<string, string> = { txNoAccount: 'tx_no_source_account' };
const OP_SPECIAL: Record<string, string> = {
  opBadAuth: 'op_bad_auth',
  opNoAccount: 'op_no_source_account',
  opNotSupported: 'op_not_supported',
  opTooManySubentries: 'op_too_many_subentries',
  opExceededWorkLimit: 'op_exceeded_work_limit',
  createAccountAlreadyExist: 'op_already_exists',
  invokeHostFunctionTrapped: 'function_trapped',
};
const OP_PREFIXES = [
  'createAccount',
  'payment',
  'changeTrust',
  'invokeHostFunction',
  'pathPaymentStrictReceive',
  'pathPaymentStrictSend',
  'manageSellOffer',
  'manageBuyOffer',
  'setOptions',
  'allowTrust',
  'accountMerge',
  'manageData',
  'bumpSequence',
  'restoreFootprint',
  'extendFootprintTtl',
];

const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Horizon's name for a transaction result code (`txBadSeq` -> `tx_bad_seq`). */
export function txCodeName(xdrName: string): string {
  return TX_SPECIAL[xdrName] ?? snake(xdrName);
}

/** Horizon's name for an operation result code (`paymentNoTrust` -> `op_no_trust`). */
export function opCodeName(xdrName: string): string {
  const special = OP_SPECIAL[xdrName];
  if (special) return special;
  const prefix = OP_PREFIXES.find((p) => xdrName.startsWith(p));
  const rest = prefix ? xdrName.slice(prefix.length) : xdrName;
  if (rest === 'Success') return 'op_success';
  return `op${snake(rest.charAt(0).toLowerCase() + rest.slice(1)).replace(/^/, '_')}`;
}

function operationCode(r: xdr.OperationResult): string {
  const outer = r.switch().name;
  if (outer !== 'opInner') return opCodeName(outer);
  const tr = r.tr();
  // Each OperationResultTr arm holds a union whose switch is the operation's result code.
  const inner = (tr.value() as { switch(): { name: string } }).switch();
  return opCodeName(inner.name);
}

/** Decodes a TransactionResult (object or base64) into Horizon-style result codes. */
export function resultCodesFromXdr(result: xdr.TransactionResult | string): ResultCodes {
  const r = typeof result === 'string' ? xdr.TransactionResult.fromXDR(result, 'base64') : result;
  const res = r.result();
  const name = res.switch().name;
  let operations: string[] = [];
  if (name === 'txSuccess' || name === 'txFailed') operations = res.results().map(operationCode);
  if (name === 'txFeeBumpInnerFailed' || name === 'txFeeBumpInnerSuccess') {
    const inner = res.innerResultPair().result().result();
    return {
      transaction: txCodeName(inner.switch().name),
      operations: inner.switch().name === 'txFailed' || inner.switch().name === 'txSuccess' ? inner.results().map(operationCode) : [],
    };
  }
  return { transaction: txCodeName(name), operations };
}
