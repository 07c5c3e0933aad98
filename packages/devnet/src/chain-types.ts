// The devnet chain's records (transactions, events, ledgers), its submit answers,
// the network constants, and the internal shapes the chain's parts share.
import type { xdr } from '@stellar/stellar-sdk';
import type { ResultCodes } from '@farebox/stellar';
import type { DevnetContract } from './contracts.js';
import type { AccountState, DataEntry, Overlay } from './state.js';

export const BASE_FEE = 100n;
export const BASE_RESERVE = 5_000_000n;
export const PROTOCOL_VERSION = 23;

export interface TxRecord {
  hash: string;
  ledger: number;
  applicationOrder: number;
  createdAt: number;
  source: string;
  successful: boolean;
  feeCharged: bigint;
  envelopeXdr: string;
  resultXdr: string;
  resultMetaXdr: string;
  resultCodes: ResultCodes;
  /** Base64 ContractEvents per operation (getTransaction's contractEventsXdr). */
  contractEventsXdr: string[][];
  /** Human summaries of the operations, for the explorer. */
  summary: string[];
  /** Contract ids and accounts this transaction touched, for the explorer. */
  touched: string[];
  returnValueXdr?: string;
  /** Set on a fee-bump transaction: the account that paid the fee (the inner source's XLM does not move). */
  feeSource?: string;
}

export interface EventRecord {
  id: string;
  ledger: number;
  ledgerClosedAt: string;
  contractId: string;
  txHash: string;
  transactionIndex: number;
  operationIndex: number;
  topic: string[];
  value: string;
}

export interface LedgerInfo {
  seq: number;
  closeTime: number;
  hash: string;
  prevHash: string;
}

export type SubmitStatus = 'PENDING' | 'DUPLICATE' | 'ERROR' | 'TRY_AGAIN_LATER';
export interface SubmitResult {
  status: SubmitStatus;
  hash: string;
  errorResultXdr?: string;
  resultCodes?: ResultCodes;
}

export interface Parsed {
  envB64: string;
  tx: xdr.Transaction;
  hash: string;
  hashBytes: Buffer;
  source: string;
  seq: bigint;
  signatures: xdr.DecoratedSignature[];
  soroban?: xdr.SorobanTransactionData;
  /** A fee-bump envelope: `hash` is the outer hash, `hashBytes` the inner one (what the inner source signed). */
  feeBump?: { feeSource: string; fee: bigint; hashBytes: Buffer; signatures: xdr.DecoratedSignature[] };
}

export class MalformedXdr extends Error {}

export interface ContractEventOut {
  contractId: string;
  topics: xdr.ScVal[];
  data: xdr.ScVal;
}

export interface InvocationOutcome {
  retval: xdr.ScVal;
  events: ContractEventOut[];
  recordedAuth: string[];
  /** Contracts created during the call; registered only when the transaction commits. */
  deployed: DevnetContract[];
  readOnly: Map<string, xdr.LedgerKey>;
  readWrite: Map<string, xdr.LedgerKey>;
}

export interface View {
  accounts: Overlay<AccountState>;
  data: Overlay<DataEntry>;
  nonces: Set<string>;
}
