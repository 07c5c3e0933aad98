// XDR builders of the devnet chain: result and meta encodings, ledger entries,
// event ids and the amount format of the explorer's summaries.
import { StrKey, xdr } from '@stellar/stellar-sdk';
import type { ContractEventOut } from './chain-types.js';
import type { AccountState } from './state.js';
import { gToAccountId, int64, usdcTrustLineAsset } from './xdrutil.js';

export const ZERO32 = Buffer.alloc(32);

type Rec<T> = Record<string, (...a: unknown[]) => T>;
const TxRR = xdr.TransactionResultResult as unknown as Rec<xdr.TransactionResultResult>;

export const dataMapKey = (contractId: string, keyB64: string) => `${contractId}|${keyB64}`;
export const iso = (unix: number) => new Date(unix * 1000).toISOString().replace('.000Z', 'Z');

export function toid(ledger: number, txIndex: number, opIndex: number): string {
  return ((BigInt(ledger) << 32n) | (BigInt(txIndex) << 12n) | BigInt(opIndex)).toString().padStart(19, '0');
}

export function txResult(code: string, fee: bigint, opResults?: xdr.OperationResult[]): xdr.TransactionResult {
  const fn = TxRR[code];
  if (!fn) throw new Error(`unknown result ${code}`);
  return new xdr.TransactionResult({ feeCharged: int64(fee), result: opResults ? fn(opResults) : fn(), ext: new xdr.TransactionResultExt(0) });
}

/** A fee-bump transaction's result: the inner transaction's result paired with its hash. */
export function feeBumpResult(ok: boolean, fee: bigint, innerHash: Buffer, opResults: xdr.OperationResult[]): xdr.TransactionResult {
  const InnerRR = xdr.InnerTransactionResultResult as unknown as Rec<xdr.InnerTransactionResultResult>;
  const inner = new xdr.InnerTransactionResult({
    feeCharged: int64(0n),
    result: InnerRR[ok ? 'txSuccess' : 'txFailed']!(opResults),
    ext: new xdr.InnerTransactionResultExt(0),
  });
  const pair = new xdr.InnerTransactionResultPair({ transactionHash: innerHash, result: inner });
  return new xdr.TransactionResult({
    feeCharged: int64(fee),
    result: TxRR[ok ? 'txFeeBumpInnerSuccess' : 'txFeeBumpInnerFailed']!(pair),
    ext: new xdr.TransactionResultExt(0),
  });
}

export function opResult(type: 'createAccount' | 'payment' | 'changeTrust' | 'invokeHostFunction', code: string, value?: unknown): xdr.OperationResult {
  const union = (xdr as unknown as Record<string, Rec<unknown>>)[`${type.charAt(0).toUpperCase()}${type.slice(1)}Result`]!;
  const inner = value === undefined ? union[code]!() : union[code]!(value);
  return xdr.OperationResult.opInner((xdr.OperationResultTr as unknown as Rec<xdr.OperationResultTr>)[type]!(inner));
}

export function contractEvent(e: ContractEventOut): xdr.ContractEvent {
  return new xdr.ContractEvent({
    ext: new xdr.ExtensionPoint(0),
    contractId: StrKey.decodeContract(e.contractId) as unknown as xdr.ContractId,
    type: xdr.ContractEventType.contract(),
    body: new xdr.ContractEventBody(0, new xdr.ContractEventV0({ topics: e.topics, data: e.data })),
  });
}

export function emptyMeta(soroban: boolean): string {
  return new xdr.TransactionMeta(
    4,
    new xdr.TransactionMetaV4({
      ext: new xdr.ExtensionPoint(0),
      txChangesBefore: [],
      operations: [],
      txChangesAfter: [],
      sorobanMeta: soroban ? new xdr.SorobanTransactionMetaV2({ ext: new xdr.SorobanTransactionMetaExt(0), returnValue: null }) : null,
      events: [],
      diagnosticEvents: [],
    }),
  ).toXDR('base64');
}

export function accountEntry(a: AccountState): xdr.AccountEntry {
  return new xdr.AccountEntry({
    accountId: gToAccountId(a.id),
    balance: int64(a.balance),
    seqNum: int64(a.seq),
    numSubEntries: a.numSubEntries,
    inflationDest: null,
    flags: 0,
    homeDomain: '',
    thresholds: Buffer.from([1, 0, 0, 0]),
    signers: [],
    ext: new xdr.AccountEntryExt(0),
  });
}

export function trustLineEntry(a: AccountState, issuer: string): xdr.TrustLineEntry {
  return new xdr.TrustLineEntry({
    accountId: gToAccountId(a.id),
    asset: usdcTrustLineAsset(issuer),
    balance: int64(a.usdc!.balance),
    limit: int64(a.usdc!.limit),
    flags: a.usdc!.flags,
    ext: new xdr.TrustLineEntryExt(0),
  });
}

export const fmt = (v: bigint) => `${v / 10_000_000n}.${(v % 10_000_000n).toString().padStart(7, '0')}`.replace(/\.?0+$/, '') || '0';
