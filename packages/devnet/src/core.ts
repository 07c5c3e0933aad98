import { Address, Keypair, StrKey, xdr, type Asset } from '@stellar/stellar-sdk';
import { resultCodesFromXdr, type ResultCodes } from '@farebox/stellar';
import { HostError, type DevnetContract, type HostContext } from './contracts.js';
import { cloneAccount, Overlay, type AccountState, type DataEntry } from './state.js';
import { accountIdToG, gToAccountId, hintOf, int64, MAX_INT64, muxedToG, scAddressToString, sha256, toBig, usdcTrustLineAsset, verifyEd25519 } from './xdrutil.js';

export const BASE_FEE = 100n;
export const BASE_RESERVE = 5_000_000n;
export const PROTOCOL_VERSION = 23;
const ZERO32 = Buffer.alloc(32);

type Rec<T> = Record<string, (...a: unknown[]) => T>;
const TxRR = xdr.TransactionResultResult as unknown as Rec<xdr.TransactionResultResult>;

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

interface Parsed {
  envB64: string;
  tx: xdr.Transaction;
  hash: string;
  hashBytes: Buffer;
  source: string;
  seq: bigint;
  signatures: xdr.DecoratedSignature[];
  soroban?: xdr.SorobanTransactionData;
}

export class MalformedXdr extends Error {}

interface ContractEventOut {
  contractId: string;
  topics: xdr.ScVal[];
  data: xdr.ScVal;
}

interface InvocationOutcome {
  retval: xdr.ScVal;
  events: ContractEventOut[];
  recordedAuth: string[];
  /** Contracts created during the call; registered only when the transaction commits. */
  deployed: DevnetContract[];
  readOnly: Map<string, xdr.LedgerKey>;
  readWrite: Map<string, xdr.LedgerKey>;
}

interface View {
  accounts: Overlay<AccountState>;
  data: Overlay<DataEntry>;
  nonces: Set<string>;
}

const dataMapKey = (contractId: string, keyB64: string) => `${contractId}|${keyB64}`;
const iso = (unix: number) => new Date(unix * 1000).toISOString().replace('.000Z', 'Z');

function toid(ledger: number, txIndex: number, opIndex: number): string {
  return ((BigInt(ledger) << 32n) | (BigInt(txIndex) << 12n) | BigInt(opIndex)).toString().padStart(19, '0');
}

function txResult(code: string, fee: bigint, opResults?: xdr.OperationResult[]): xdr.TransactionResult {
  const fn = TxRR[code];
  if (!fn) throw new Error(`unknown result ${code}`);
  return new xdr.TransactionResult({ feeCharged: int64(fee), result: opResults ? fn(opResults) : fn(), ext: new xdr.TransactionResultExt(0) });
}

function opResult(type: 'createAccount' | 'payment' | 'changeTrust' | 'invokeHostFunction', code: string, value?: unknown): xdr.OperationResult {
  const union = (xdr as unknown as Record<string, Rec<unknown>>)[`${type.charAt(0).toUpperCase()}${type.slice(1)}Result`]!;
  const inner = value === undefined ? union[code]!() : union[code]!(value);
  return xdr.OperationResult.opInner((xdr.OperationResultTr as unknown as Rec<xdr.OperationResultTr>)[type]!(inner));
}

export interface ChainOptions {
  passphrase: string;
  usdc: Asset;
  /** Unix seconds source (tests may not override: ledgers follow the wall clock). */
  now?: () => number;
}

/**
 * The ledger state and transaction processor: accounts, trustlines, contract
 * data, hosted contracts, transactions, events and ledgers. Transport-free.
 */
export class Chain {
  readonly passphrase: string;
  readonly networkId: Buffer;
  readonly usdc: Asset;
  readonly usdcIssuer: string;
  readonly accounts = new Map<string, AccountState>();
  readonly data = new Map<string, DataEntry>();
  readonly contracts = new Map<string, DevnetContract>();
  readonly txs = new Map<string, TxRecord>();
  readonly txOrder: string[] = [];
  readonly events: EventRecord[] = [];
  readonly nonces = new Set<string>();
  latest: LedgerInfo;
  genesis: LedgerInfo;
  /** Called after each closed ledger with the transactions it applied. */
  onClose: ((ledger: LedgerInfo, txs: TxRecord[]) => void) | undefined;
  private pending: Parsed[] = [];
  private pendingBySource = new Map<string, number>();
  private waiters = new Map<string, Array<(r: TxRecord) => void>>();
  private readonly now: () => number;
  private headerCache: { seq: number; header: string; meta: string } | undefined;

  constructor(opts: ChainOptions) {
    this.passphrase = opts.passphrase;
    this.networkId = sha256(opts.passphrase);
    this.usdc = opts.usdc;
    this.usdcIssuer = opts.usdc.getIssuer();
    this.now = opts.now ?? (() => Math.floor(Date.now() / 1000));
    const t = this.now();
    this.genesis = { seq: 1, closeTime: t, hash: sha256('farebox-devnet:genesis').toString('hex'), prevHash: ZERO32.toString('hex') };
    this.latest = this.genesis;
  }

  registerContract(c: DevnetContract): void {
    this.contracts.set(c.id, c);
  }

  /** Creates an account outside any transaction (genesis accounts). */
  createGenesisAccount(id: string, balance: bigint): void {
    if (this.accounts.has(id)) return;
    this.accounts.set(id, { id, balance, seq: BigInt(this.latest.seq) << 32n, numSubEntries: 0, lastModified: this.latest.seq });
  }

  get pendingCount(): number {
    return this.pending.length;
  }

  // ---------------------------------------------------------------- parsing
  parse(envB64: string, withHash = true): Parsed {
    let env: xdr.TransactionEnvelope;
    try {
      env = xdr.TransactionEnvelope.fromXDR(envB64, 'base64');
    } catch {
      throw new MalformedXdr('invalid_xdr');
    }
    if (env.switch().name !== 'envelopeTypeTx') throw new MalformedXdr('only v1 transaction envelopes are supported (no fee bumps)');
    const tx = env.v1().tx();
    const hashBytes = withHash ? sha256(Buffer.concat([this.networkId, Buffer.from([0, 0, 0, 2]), tx.toXDR()])) : ZERO32;
    const ext = tx.ext();
    const parsed: Parsed = {
      envB64,
      tx,
      hash: hashBytes.toString('hex'),
      hashBytes,
      source: muxedToG(tx.sourceAccount()),
      seq: toBig(tx.seqNum()),
      signatures: env.v1().signatures(),
    };
    if (ext.switch() === 1) parsed.soroban = ext.sorobanData();
    return parsed;
  }

  // ------------------------------------------------------------- validation
  private minFee(p: Parsed): bigint {
    return BASE_FEE * BigInt(Math.max(1, p.tx.operations().length)) + (p.soroban ? toBig(p.soroban.resourceFee()) : 0n);
  }

  private minBalance(a: AccountState, extraSubEntries = 0): bigint {
    return (2n + BigInt(a.numSubEntries + extraSubEntries)) * BASE_RESERVE;
  }

  /** The checks stellar-core runs before accepting a transaction; returns a result code or null. */
  private precheck(p: Parsed, pendingAhead: number): string | null {
    const ops = p.tx.operations();
    if (ops.length === 0) return 'txMissingOperation';
    const hasSoroban = ops.some((o) => o.body().switch().name === 'invokeHostFunction');
    if (hasSoroban && (ops.length !== 1 || !p.soroban)) return 'txSorobanInvalid';
    if (!hasSoroban && p.soroban) return 'txSorobanInvalid';
    const cond = p.tx.cond();
    const tb = cond.switch().name === 'precondTime' ? cond.timeBounds() : cond.switch().name === 'precondV2' ? cond.v2().timeBounds() : undefined;
    const now = this.now();
    if (tb) {
      const min = Number(toBig(tb.minTime()));
      const max = Number(toBig(tb.maxTime()));
      if (min && now < min) return 'txTooEarly';
      if (max && now > max) return 'txTooLate';
    }
    const acc = this.accounts.get(p.source);
    if (!acc) return 'txNoAccount';
    if (p.seq !== acc.seq + BigInt(pendingAhead) + 1n) return 'txBadSeq';
    if (BigInt(p.tx.fee()) < this.minFee(p)) return 'txInsufficientFee';
    if (acc.balance < this.minFee(p)) return 'txInsufficientBalance';
    // Signatures: every needed account signs with its master key (weight 1, thresholds 0 -> at least 1).
    const needed = new Set<string>([p.source]);
    for (const op of ops) {
      const src = op.sourceAccount();
      if (src) needed.add(muxedToG(src));
    }
    const used = new Set<number>();
    for (const who of needed) {
      const hint = hintOf(who);
      let ok = false;
      p.signatures.forEach((s, i) => {
        if (ok || used.has(i)) return;
        if (Buffer.compare(Buffer.from(s.hint()), hint) === 0 && verifyEd25519(who, p.hashBytes, s.signature())) {
          ok = true;
          used.add(i);
        }
      });
      if (!ok) return 'txBadAuth';
    }
    if (used.size !== p.signatures.length) return 'txBadAuthExtra';
    return null;
  }

  // ------------------------------------------------------------- submission
  /** Validates and queues a transaction (sendTransaction semantics). */
  submit(envB64: string): SubmitResult {
    const p = this.parse(envB64);
    if (this.txs.has(p.hash) || this.pending.some((q) => q.hash === p.hash)) return { status: 'DUPLICATE', hash: p.hash };
    const code = this.precheck(p, this.pendingBySource.get(p.source) ?? 0);
    if (code) {
      const result = txResult(code, 0n);
      return { status: 'ERROR', hash: p.hash, errorResultXdr: result.toXDR('base64'), resultCodes: resultCodesFromXdr(result) };
    }
    this.pending.push(p);
    this.pendingBySource.set(p.source, (this.pendingBySource.get(p.source) ?? 0) + 1);
    return { status: 'PENDING', hash: p.hash };
  }

  /** Resolves when the transaction is in a closed ledger. */
  waitFor(hash: string): Promise<TxRecord> {
    const done = this.txs.get(hash);
    if (done) return Promise.resolve(done);
    return new Promise((resolve) => {
      const list = this.waiters.get(hash) ?? [];
      list.push(resolve);
      this.waiters.set(hash, list);
    });
  }

  // ------------------------------------------------------------ ledger close
  closeLedger(): LedgerInfo {
    const seq = this.latest.seq + 1;
    const closeTime = Math.max(this.now(), this.latest.closeTime);
    const batch = this.pending;
    this.pending = [];
    this.pendingBySource.clear();
    const applied: TxRecord[] = [];
    batch.forEach((p, i) => applied.push(this.applyTx(p, seq, closeTime, i + 1)));
    const prevHash = this.latest.hash;
    const hash = sha256(Buffer.concat([Buffer.from(prevHash, 'hex'), Buffer.from(`${seq}:${closeTime}:${applied.map((t) => t.hash).join(',')}`)])).toString('hex');
    this.latest = { seq, closeTime, hash, prevHash };
    for (const r of applied) {
      const ws = this.waiters.get(r.hash);
      if (ws) {
        this.waiters.delete(r.hash);
        for (const w of ws) w(r);
      }
    }
    this.onClose?.(this.latest, applied);
    return this.latest;
  }

  private applyTx(p: Parsed, ledger: number, closeTime: number, order: number): TxRecord {
    const base = { hash: p.hash, ledger, applicationOrder: order, createdAt: closeTime, source: p.source, envelopeXdr: p.envB64 };
    const summary = p.tx.operations().map((op) => this.describe(op, p.source));
    const code = this.precheck(p, 0);
    if (code) {
      const result = txResult(code, 0n);
      return this.record({ ...base, successful: false, feeCharged: 0n, resultXdr: result.toXDR('base64'), resultMetaXdr: emptyMeta(p.soroban !== undefined), resultCodes: resultCodesFromXdr(result), contractEventsXdr: [], summary, touched: [p.source] }, []);
    }
    const acc = this.accounts.get(p.source)!;
    const fee = this.minFee(p) < BigInt(p.tx.fee()) ? this.minFee(p) : BigInt(p.tx.fee());
    acc.balance -= fee;
    acc.seq = p.seq;
    acc.lastModified = ledger;

    const view: View = { accounts: new Overlay(this.accounts, cloneAccount), data: new Overlay(this.data, (d) => ({ ...d })), nonces: new Set() };
    const opResults: xdr.OperationResult[] = [];
    const opMetas: xdr.OperationMetaV2[] = [];
    const opEvents: ContractEventOut[][] = [];
    const touched = new Set<string>([p.source]);
    let ok = true;
    let returnValue: xdr.ScVal | undefined;
    const deployed: DevnetContract[] = [];
    p.tx.operations().forEach((op, i) => {
      const src = op.sourceAccount() ? muxedToG(op.sourceAccount()!) : p.source;
      const r = this.applyOp(view, op, src, p, ledger, closeTime, touched);
      opResults.push(r.result);
      if (!r.ok) ok = false;
      opEvents.push(r.events);
      if (r.returnValue) returnValue = r.returnValue;
      if (r.deployed) deployed.push(...r.deployed);
      opMetas.push(new xdr.OperationMetaV2({ ext: new xdr.ExtensionPoint(0), changes: r.changes, events: r.ok ? r.events.map(contractEvent) : [] }));
      void i;
    });
    if (ok) {
      view.accounts.commit();
      view.data.commit();
      for (const n of view.nonces) this.nonces.add(n);
      for (const c of deployed) {
        this.registerContract(c);
        touched.add(c.id);
      }
      for (const id of view.accounts.writes.keys()) touched.add(id);
    }
    const result = txResult(ok ? 'txSuccess' : 'txFailed', fee, opResults);
    const meta = new xdr.TransactionMetaV4({
      ext: new xdr.ExtensionPoint(0),
      txChangesBefore: [],
      operations: ok ? opMetas : opMetas.map(() => new xdr.OperationMetaV2({ ext: new xdr.ExtensionPoint(0), changes: [], events: [] })),
      txChangesAfter: [],
      sorobanMeta: p.soroban ? new xdr.SorobanTransactionMetaV2({ ext: new xdr.SorobanTransactionMetaExt(0), returnValue: ok ? (returnValue ?? xdr.ScVal.scvVoid()) : null }) : null,
      events: [],
      diagnosticEvents: [],
    });
    const eventRecords: EventRecord[] = [];
    const contractEventsXdr: string[][] = [];
    opEvents.forEach((evs, opIndex) => {
      contractEventsXdr.push(ok ? evs.map((e) => contractEvent(e).toXDR('base64')) : []);
      if (!ok) return;
      evs.forEach((e, ei) => {
        touched.add(e.contractId);
        eventRecords.push({
          id: `${toid(ledger, order, opIndex)}-${String(ei).padStart(10, '0')}`,
          ledger,
          ledgerClosedAt: iso(closeTime),
          contractId: e.contractId,
          txHash: p.hash,
          transactionIndex: order,
          operationIndex: opIndex,
          topic: e.topics.map((t) => t.toXDR('base64')),
          value: e.data.toXDR('base64'),
        });
      });
    });
    const rec: TxRecord = {
      ...base,
      successful: ok,
      feeCharged: fee,
      resultXdr: result.toXDR('base64'),
      resultMetaXdr: new xdr.TransactionMeta(4, meta).toXDR('base64'),
      resultCodes: resultCodesFromXdr(result),
      contractEventsXdr,
      summary,
      touched: [...touched],
    };
    if (ok && returnValue) rec.returnValueXdr = returnValue.toXDR('base64');
    return this.record(rec, eventRecords);
  }

  /** Adds an applied transaction (and its events) to the history. Also used when loading from disk. */
  record(rec: TxRecord, events: EventRecord[]): TxRecord {
    this.txs.set(rec.hash, rec);
    this.txOrder.push(rec.hash);
    for (const e of events) this.events.push(e);
    return rec;
  }

  // ------------------------------------------------------------- operations
  private describe(op: xdr.Operation, txSource: string): string {
    const src = op.sourceAccount() ? muxedToG(op.sourceAccount()!) : txSource;
    const body = op.body();
    switch (body.switch().name) {
      case 'createAccount': {
        const b = body.createAccountOp();
        return `create account ${accountIdToG(b.destination())} with ${fmt(toBig(b.startingBalance()))} XLM (from ${src})`;
      }
      case 'payment': {
        const b = body.paymentOp();
        const asset = b.asset().switch().name === 'assetTypeNative' ? 'XLM' : 'USDC';
        return `pay ${fmt(toBig(b.amount()))} ${asset} from ${src} to ${muxedToG(b.destination())}`;
      }
      case 'changeTrust':
        return `change trust by ${src} (limit ${fmt(toBig(body.changeTrustOp().limit()))})`;
      case 'invokeHostFunction': {
        const hf = body.invokeHostFunctionOp().hostFunction();
        if (hf.switch().name !== 'hostFunctionTypeInvokeContract') return 'invoke host function';
        const a = hf.invokeContract();
        return `invoke ${a.functionName().toString()} on ${scAddressToString(a.contractAddress())} by ${src}`;
      }
      default:
        return body.switch().name;
    }
  }

  private applyOp(view: View, op: xdr.Operation, src: string, p: Parsed, ledger: number, closeTime: number, touched: Set<string>): { ok: boolean; result: xdr.OperationResult; changes: xdr.LedgerEntryChange[]; events: ContractEventOut[]; returnValue?: xdr.ScVal; deployed?: DevnetContract[] } {
    const body = op.body();
    const none = { changes: [] as xdr.LedgerEntryChange[], events: [] as ContractEventOut[] };
    const srcAcc = view.accounts.getMut(src);
    if (!srcAcc) return { ok: false, result: xdr.OperationResult.opNoAccount(), ...none };
    switch (body.switch().name) {
      case 'createAccount': {
        const b = body.createAccountOp();
        const dest = accountIdToG(b.destination());
        const amount = toBig(b.startingBalance());
        const fail = (c: string) => ({ ok: false, result: opResult('createAccount', c), ...none });
        if (amount <= 0n || dest === src) return fail('createAccountMalformed');
        if (view.accounts.get(dest)) return fail('createAccountAlreadyExist');
        if (amount < 2n * BASE_RESERVE) return fail('createAccountLowReserve');
        if (srcAcc.balance - amount < this.minBalance(srcAcc)) return fail('createAccountUnderfunded');
        srcAcc.balance -= amount;
        const created: AccountState = { id: dest, balance: amount, seq: BigInt(ledger) << 32n, numSubEntries: 0, lastModified: ledger };
        view.accounts.set(dest, created);
        touched.add(dest);
        const entry = new xdr.LedgerEntry({ lastModifiedLedgerSeq: ledger, data: xdr.LedgerEntryData.account(accountEntry(created)), ext: new xdr.LedgerEntryExt(0) });
        return { ok: true, result: opResult('createAccount', 'createAccountSuccess'), changes: [xdr.LedgerEntryChange.ledgerEntryCreated(entry)], events: [] };
      }
      case 'payment': {
        const b = body.paymentOp();
        const dest = muxedToG(b.destination());
        const amount = toBig(b.amount());
        const fail = (c: string) => ({ ok: false, result: opResult('payment', c), ...none });
        if (amount <= 0n) return fail('paymentMalformed');
        const native = b.asset().switch().name === 'assetTypeNative';
        if (!native && !this.isUsdc(b.asset())) return fail('paymentNoIssuer');
        const destAcc = view.accounts.getMut(dest);
        if (!destAcc) return fail('paymentNoDestination');
        touched.add(dest);
        if (native) {
          if (srcAcc.balance - amount < this.minBalance(srcAcc)) return fail('paymentUnderfunded');
          if (destAcc.balance + amount > MAX_INT64) return fail('paymentLineFull');
          srcAcc.balance -= amount;
          // Same object when paying oneself: read back through the overlay.
          view.accounts.getMut(dest)!.balance += amount;
        } else {
          if (src !== this.usdcIssuer) {
            if (!srcAcc.usdc) return fail('paymentSrcNoTrust');
            if (srcAcc.usdc.balance < amount) return fail('paymentUnderfunded');
          }
          if (dest !== this.usdcIssuer) {
            if (!destAcc.usdc) return fail('paymentNoTrust');
            if (destAcc.usdc.balance + amount > destAcc.usdc.limit) return fail('paymentLineFull');
          }
          if (src !== this.usdcIssuer) {
            srcAcc.usdc!.balance -= amount;
            srcAcc.usdc!.lastModified = ledger;
          }
          if (dest !== this.usdcIssuer) {
            destAcc.usdc!.balance += amount;
            destAcc.usdc!.lastModified = ledger;
          }
        }
        return { ok: true, result: opResult('payment', 'paymentSuccess'), ...none };
      }
      case 'changeTrust': {
        const b = body.changeTrustOp();
        const limit = toBig(b.limit());
        const fail = (c: string) => ({ ok: false, result: opResult('changeTrust', c), ...none });
        const line = b.line();
        if (line.switch().name !== 'assetTypeCreditAlphanum4' || !this.isUsdc(xdr.Asset.assetTypeCreditAlphanum4(line.alphaNum4()))) return fail('changeTrustNoIssuer');
        if (src === this.usdcIssuer || limit < 0n) return fail('changeTrustMalformed');
        if (!srcAcc.usdc) {
          if (limit === 0n) return fail('changeTrustInvalidLimit');
          if (srcAcc.balance < this.minBalance(srcAcc, 1)) return fail('changeTrustLowReserve');
          srcAcc.usdc = { balance: 0n, limit, flags: 1, lastModified: ledger };
          srcAcc.numSubEntries += 1;
        } else if (limit === 0n) {
          if (srcAcc.usdc.balance !== 0n) return fail('changeTrustInvalidLimit');
          delete srcAcc.usdc;
          srcAcc.numSubEntries -= 1;
        } else {
          if (limit < srcAcc.usdc.balance) return fail('changeTrustInvalidLimit');
          srcAcc.usdc.limit = limit;
          srcAcc.usdc.lastModified = ledger;
        }
        return { ok: true, result: opResult('changeTrust', 'changeTrustSuccess'), ...none };
      }
      case 'invokeHostFunction': {
        const b = body.invokeHostFunctionOp();
        const hf = b.hostFunction();
        if (hf.switch().name !== 'hostFunctionTypeInvokeContract') return { ok: false, result: opResult('invokeHostFunction', 'invokeHostFunctionMalformed'), ...none };
        try {
          const out = this.invoke(view, hf.invokeContract(), { source: src, ledger, timestamp: closeTime, authMode: 'enforce', authEntries: b.auth() });
          const hash = sha256(new xdr.InvokeHostFunctionSuccessPreImage({ returnValue: out.retval, events: out.events.map(contractEvent) }).toXDR());
          return { ok: true, result: opResult('invokeHostFunction', 'invokeHostFunctionSuccess', hash), changes: [], events: out.events, returnValue: out.retval, deployed: out.deployed };
        } catch (e) {
          if (!(e instanceof HostError)) throw e;
          return { ok: false, result: opResult('invokeHostFunction', 'invokeHostFunctionTrapped'), ...none };
        }
      }
      default:
        return { ok: false, result: xdr.OperationResult.opNotSupported(), ...none };
    }
    void p;
  }

  private isUsdc(asset: xdr.Asset): boolean {
    if (asset.switch().name !== 'assetTypeCreditAlphanum4') return false;
    const a4 = asset.alphaNum4();
    return Buffer.from(a4.assetCode()).toString('latin1').replace(/\0+$/, '') === 'USDC' && accountIdToG(a4.issuer()) === this.usdcIssuer;
  }

  // -------------------------------------------------------------- contracts
  /** Runs a contract call against a view (simulation or application). Throws HostError. */
  invoke(
    view: View,
    call: xdr.InvokeContractArgs,
    opts: { source: string; ledger: number; timestamp: number; authMode: 'record' | 'enforce'; authEntries: xdr.SorobanAuthorizationEntry[] },
  ): InvocationOutcome {
    const rootId = scAddressToString(call.contractAddress());
    const readOnly = new Map<string, xdr.LedgerKey>();
    const readWrite = new Map<string, xdr.LedgerKey>();
    const events: ContractEventOut[] = [];
    const recorded: string[] = [];
    const deployed = new Map<string, DevnetContract>();
    const rootB64 = call.toXDR('base64');
    const touch = (k: xdr.LedgerKey, write: boolean) => {
      const b = k.toXDR('base64');
      if (write) {
        readOnly.delete(b);
        readWrite.set(b, k);
      } else if (!readWrite.has(b)) readOnly.set(b, k);
    };
    const lookup = (id: string) => deployed.get(id) ?? this.contracts.get(id);
    let depth = 0;
    const run = (contractId: string, fn: string, args: xdr.ScVal[], caller: string | undefined): xdr.ScVal => {
      const contractAddr = new Address(contractId).toScAddress();
      const instanceKey = xdr.LedgerKey.contractData(new xdr.LedgerKeyContractData({ contract: contractAddr, key: xdr.ScVal.scvLedgerKeyContractInstance(), durability: xdr.ContractDataDurability.persistent() }));
      touch(instanceKey, false);
      const contract = lookup(contractId);
      if (!contract) throw new HostError('Storage', 'MissingValue');
      if (depth >= 8) throw new HostError('WasmVm', 'ExceededLimit');
      const dataKey = (key: xdr.ScVal) => xdr.LedgerKey.contractData(new xdr.LedgerKeyContractData({ contract: contractAddr, key, durability: xdr.ContractDataDurability.persistent() }));
      const ctx: HostContext = {
        contractId,
        ledger: opts.ledger,
        timestamp: opts.timestamp,
        getData: (key) => {
          const kb = key.toXDR('base64');
          touch(dataKey(key), false);
          const e = view.data.get(dataMapKey(contractId, kb));
          return e ? xdr.ScVal.fromXDR(e.val, 'base64') : undefined;
        },
        putData: (key, val) => {
          const kb = key.toXDR('base64');
          touch(dataKey(key), true);
          view.data.set(dataMapKey(contractId, kb), { contractId, key: kb, val: val.toXDR('base64'), lastModified: opts.ledger });
        },
        delData: (key) => {
          touch(dataKey(key), true);
          view.data.delete(dataMapKey(contractId, key.toXDR('base64')));
        },
        emit: (topics, data) => events.push({ contractId, topics, data }),
        account: (id, write) => {
          touch(xdr.LedgerKey.trustline(new xdr.LedgerKeyTrustLine({ accountId: gToAccountId(id), asset: usdcTrustLineAsset(this.usdcIssuer) })), write);
          const a = write ? view.accounts.getMut(id) : view.accounts.get(id);
          if (a && write && a.usdc) a.usdc.lastModified = opts.ledger;
          return a;
        },
        requireAuth: (address) => {
          // A contract authorises the calls it makes itself (Soroban's invoker auth).
          if (caller !== undefined && address === caller) return;
          if (opts.authMode === 'record') {
            if (!recorded.includes(address)) recorded.push(address);
            return;
          }
          for (const entry of opts.authEntries) {
            const f = entry.rootInvocation().function();
            if (f.switch().name !== 'sorobanAuthorizedFunctionTypeContractFn' || f.contractFn().toXDR('base64') !== rootB64) continue;
            const creds = entry.credentials();
            if (creds.switch().name === 'sorobanCredentialsSourceAccount') {
              if (address === opts.source) return;
              continue;
            }
            const ac = creds.address();
            if (scAddressToString(ac.address()) !== address) continue;
            if (this.checkAddressSignature(entry, address, opts.ledger, view)) return;
          }
          throw new HostError('Auth', 'InvalidAction');
        },
        call: (target, callFn, callArgs) => {
          depth += 1;
          try {
            return run(target, callFn, callArgs, contractId);
          } finally {
            depth -= 1;
          }
        },
        deploy: (created) => {
          if (lookup(created.id)) throw new HostError('Storage', 'ExistingValue');
          deployed.set(created.id, created);
        },
      };
      return contract.invoke(ctx, fn, args);
    };
    const retval = run(rootId, call.functionName().toString(), call.args(), undefined);
    return { retval, events, recordedAuth: recorded, readOnly, readWrite, deployed: [...deployed.values()] };
  }

  private checkAddressSignature(entry: xdr.SorobanAuthorizationEntry, address: string, ledger: number, view: View): boolean {
    if (!StrKey.isValidEd25519PublicKey(address) || !view.accounts.get(address)) return false;
    const ac = entry.credentials().address();
    const nonceKey = `${address}:${toBig(ac.nonce())}`;
    if (this.nonces.has(nonceKey) || view.nonces.has(nonceKey)) return false;
    if (ac.signatureExpirationLedger() < ledger) return false;
    const preimage = xdr.HashIdPreimage.envelopeTypeSorobanAuthorization(
      new xdr.HashIdPreimageSorobanAuthorization({ networkId: this.networkId, nonce: ac.nonce(), signatureExpirationLedger: ac.signatureExpirationLedger(), invocation: entry.rootInvocation() }),
    );
    const payload = sha256(preimage.toXDR());
    const sig = ac.signature();
    if (sig.switch().name !== 'scvVec') return false;
    const raw = StrKey.decodeEd25519PublicKey(address);
    for (const item of sig.vec() ?? []) {
      if (item.switch().name !== 'scvMap') continue;
      const m = new Map((item.map() ?? []).map((e) => [String(e.key().sym()), e.val()]));
      const pk = m.get('public_key');
      const s = m.get('signature');
      if (!pk || !s || pk.switch().name !== 'scvBytes' || s.switch().name !== 'scvBytes') continue;
      if (Buffer.compare(Buffer.from(pk.bytes()), raw) !== 0) continue;
      if (verifyEd25519(address, payload, s.bytes())) {
        view.nonces.add(nonceKey);
        return true;
      }
    }
    return false;
  }

  /** simulateTransaction: runs the single contract call without committing anything. */
  simulate(envB64: string): { ok: true; retval: xdr.ScVal; auth: xdr.SorobanAuthorizationEntry[]; transactionData: xdr.SorobanTransactionData; resourceFee: bigint; events: ContractEventOut[] } | { ok: false; error: string } {
    let p: Parsed;
    try {
      p = this.parse(envB64, false);
    } catch (e) {
      return { ok: false, error: e instanceof Error ? e.message : String(e) };
    }
    const ops = p.tx.operations();
    const op = ops[0];
    if (ops.length !== 1 || !op || op.body().switch().name !== 'invokeHostFunction') return { ok: false, error: 'simulation needs exactly one invokeHostFunction operation' };
    const hf = op.body().invokeHostFunctionOp().hostFunction();
    if (hf.switch().name !== 'hostFunctionTypeInvokeContract') return { ok: false, error: 'only contract invocations can be simulated on the devnet' };
    const source = op.sourceAccount() ? muxedToG(op.sourceAccount()!) : p.source;
    const view: View = { accounts: new Overlay(this.accounts, cloneAccount), data: new Overlay(this.data, (d) => ({ ...d })), nonces: new Set() };
    const call = hf.invokeContract();
    let out: InvocationOutcome;
    try {
      out = this.invoke(view, call, { source, ledger: this.latest.seq + 1, timestamp: Math.max(this.now(), this.latest.closeTime), authMode: 'record', authEntries: [] });
    } catch (e) {
      if (e instanceof HostError) return { ok: false, error: `${e.message}\n\nEvent log (newest first):\n   0: [Diagnostic Event] contract:${scAddressToString(call.contractAddress())}, topics:[error, ${e.message.replace('HostError: ', '')}], data:"escalating error to panic"` };
      throw e;
    }
    const invocation = new xdr.SorobanAuthorizedInvocation({ function: xdr.SorobanAuthorizedFunction.sorobanAuthorizedFunctionTypeContractFn(call), subInvocations: [] });
    const auth = out.recordedAuth.map((addr) => {
      if (addr === source) return new xdr.SorobanAuthorizationEntry({ credentials: xdr.SorobanCredentials.sorobanCredentialsSourceAccount(), rootInvocation: invocation });
      const nonce = xdr.Int64.fromString(BigInt.asIntN(64, sha256(`${addr}:${Date.now()}:${Math.random()}`).readBigUInt64BE(0)).toString());
      return new xdr.SorobanAuthorizationEntry({
        credentials: xdr.SorobanCredentials.sorobanCredentialsAddress(new xdr.SorobanAddressCredentials({ address: new Address(addr).toScAddress(), nonce, signatureExpirationLedger: 0, signature: xdr.ScVal.scvVoid() })),
        rootInvocation: invocation,
      });
    });
    const writes = out.readWrite.size;
    const resourceFee = 20_000n + 30_000n * BigInt(writes) + 1_000n * BigInt(out.events.length);
    const transactionData = new xdr.SorobanTransactionData({
      ext: new xdr.SorobanTransactionDataExt(0),
      resources: new xdr.SorobanResources({
        footprint: new xdr.LedgerFootprint({ readOnly: [...out.readOnly.values()], readWrite: [...out.readWrite.values()] }),
        instructions: 2_000_000,
        diskReadBytes: 2_000 * (out.readOnly.size + writes),
        writeBytes: 2_000 * writes,
      }),
      resourceFee: int64(resourceFee),
    });
    return { ok: true, retval: out.retval, auth, transactionData, resourceFee, events: out.events };
  }

  // ---------------------------------------------------------------- reading
  ledgerEntry(key: xdr.LedgerKey): { entry: xdr.LedgerEntryData; lastModified: number } | undefined {
    switch (key.switch().name) {
      case 'account': {
        const a = this.accounts.get(accountIdToG(key.account().accountId()));
        return a ? { entry: xdr.LedgerEntryData.account(accountEntry(a)), lastModified: a.lastModified } : undefined;
      }
      case 'trustline': {
        const k = key.trustLine();
        const a = this.accounts.get(accountIdToG(k.accountId()));
        if (!a?.usdc || k.asset().toXDR('base64') !== usdcTrustLineAsset(this.usdcIssuer).toXDR('base64')) return undefined;
        return { entry: xdr.LedgerEntryData.trustline(trustLineEntry(a, this.usdcIssuer)), lastModified: a.usdc.lastModified };
      }
      case 'contractData': {
        const k = key.contractData();
        const contractId = scAddressToString(k.contract());
        if (k.key().switch().name === 'scvLedgerKeyContractInstance') {
          const c = this.contracts.get(contractId);
          if (!c) return undefined;
          const executable = c.kind === 'stellar_asset' ? xdr.ContractExecutable.contractExecutableStellarAsset() : xdr.ContractExecutable.contractExecutableWasm(sha256(`farebox-devnet:wasm:${c.label}`));
          const instance = xdr.ScVal.scvContractInstance(new xdr.ScContractInstance({ executable, storage: null }));
          return { entry: xdr.LedgerEntryData.contractData(new xdr.ContractDataEntry({ ext: new xdr.ExtensionPoint(0), contract: k.contract(), key: k.key(), durability: k.durability(), val: instance })), lastModified: this.genesis.seq };
        }
        const e = this.data.get(dataMapKey(contractId, k.key().toXDR('base64')));
        if (!e) return undefined;
        return {
          entry: xdr.LedgerEntryData.contractData(new xdr.ContractDataEntry({ ext: new xdr.ExtensionPoint(0), contract: k.contract(), key: k.key(), durability: k.durability(), val: xdr.ScVal.fromXDR(e.val, 'base64') })),
          lastModified: e.lastModified,
        };
      }
      default:
        return undefined;
    }
  }

  /** Base64 LedgerHeader and LedgerCloseMeta of the latest ledger (getLatestLedger). */
  latestHeaderXdr(): { header: string; meta: string } {
    if (this.headerCache?.seq === this.latest.seq) return this.headerCache;
    const l = this.latest;
    const header = new xdr.LedgerHeader({
      ledgerVersion: PROTOCOL_VERSION,
      previousLedgerHash: Buffer.from(l.prevHash, 'hex'),
      scpValue: new xdr.StellarValue({ txSetHash: ZERO32, closeTime: xdr.Uint64.fromString(String(l.closeTime)), upgrades: [], ext: xdr.StellarValueExt.stellarValueBasic() }),
      txSetResultHash: ZERO32,
      bucketListHash: ZERO32,
      ledgerSeq: l.seq,
      totalCoins: int64(1_000_000_000_000_000_000n),
      feePool: int64(0n),
      inflationSeq: 0,
      idPool: xdr.Uint64.fromString('0'),
      baseFee: Number(BASE_FEE),
      baseReserve: Number(BASE_RESERVE),
      maxTxSetSize: 1000,
      skipList: [ZERO32, ZERO32, ZERO32, ZERO32],
      ext: new xdr.LedgerHeaderExt(0),
    });
    const meta = new xdr.LedgerCloseMeta(
      0,
      new xdr.LedgerCloseMetaV0({
        ledgerHeader: new xdr.LedgerHeaderHistoryEntry({ hash: Buffer.from(l.hash, 'hex'), header, ext: new xdr.LedgerHeaderHistoryEntryExt(0) }),
        txSet: new xdr.TransactionSet({ previousLedgerHash: Buffer.from(l.prevHash, 'hex'), txes: [] }),
        txProcessing: [],
        upgradesProcessing: [],
        scpInfo: [],
      }),
    );
    this.headerCache = { seq: l.seq, header: header.toXDR('base64'), meta: meta.toXDR('base64') };
    return this.headerCache;
  }

  /** The keypair-free view of a hosted contract's data, for the explorer. */
  contractData(contractId: string): DataEntry[] {
    const out: DataEntry[] = [];
    for (const e of this.data.values()) if (e.contractId === contractId) out.push(e);
    return out;
  }
}

function contractEvent(e: ContractEventOut): xdr.ContractEvent {
  return new xdr.ContractEvent({
    ext: new xdr.ExtensionPoint(0),
    contractId: StrKey.decodeContract(e.contractId) as unknown as xdr.ContractId,
    type: xdr.ContractEventType.contract(),
    body: new xdr.ContractEventBody(0, new xdr.ContractEventV0({ topics: e.topics, data: e.data })),
  });
}

function emptyMeta(soroban: boolean): string {
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

function trustLineEntry(a: AccountState, issuer: string): xdr.TrustLineEntry {
  return new xdr.TrustLineEntry({
    accountId: gToAccountId(a.id),
    asset: usdcTrustLineAsset(issuer),
    balance: int64(a.usdc!.balance),
    limit: int64(a.usdc!.limit),
    flags: a.usdc!.flags,
    ext: new xdr.TrustLineEntryExt(0),
  });
}

const fmt = (v: bigint) => `${v / 10_000_000n}.${(v % 10_000_000n).toString().padStart(7, '0')}`.replace(/\.?0+$/, '') || '0';
