import { scValToNative, xdr, type Asset } from '@stellar/stellar-sdk';
import { resultCodesFromXdr } from '@farebox/stellar';
import { invoke, simulate } from './chain-invoke.js';
import { applyOp, describeOp } from './chain-ops.js';
import { ledgerEntry, ledgerHeaderXdr } from './chain-read.js';
import {
  BASE_FEE,
  MalformedXdr,
  type ContractEventOut,
  type EventRecord,
  type InvocationOutcome,
  type LedgerInfo,
  type Parsed,
  type SubmitResult,
  type TxRecord,
  type View,
} from './chain-types.js';
import { contractEvent, emptyMeta, feeBumpResult, iso, toid, txResult, ZERO32 } from './chain-xdr.js';
import type { DevnetContract } from './contracts.js';
import { cloneAccount, Overlay, type AccountState, type DataEntry } from './state.js';
import { hintOf, muxedToG, sha256, toBig, verifyEd25519 } from './xdrutil.js';

export { BASE_FEE, BASE_RESERVE, PROTOCOL_VERSION, MalformedXdr } from './chain-types.js';
export type { EventRecord, LedgerInfo, SubmitResult, SubmitStatus, TxRecord } from './chain-types.js';
export { accountEntry } from './chain-xdr.js';

export interface ChainOptions {
  passphrase: string;
  usdc: Asset;
  /** Unix seconds source (tests may not override: ledgers follow the wall clock). */
  now?: () => number;
  /**
   * Accounts that a key other than their own master key signs for (account -> signer's G... key), as an
   * account's extra signer does on Stellar: the devnet's USDC issuer under the testnet passphrase is
   * testnet's issuer address, signed for by the devnet's own issuer key.
   */
  signers?: Record<string, string>;
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
  private readonly signers: Map<string, string>;
  private headerCache: { seq: number; header: string; meta: string } | undefined;

  constructor(opts: ChainOptions) {
    this.passphrase = opts.passphrase;
    this.networkId = sha256(opts.passphrase);
    this.usdc = opts.usdc;
    this.usdcIssuer = opts.usdc.getIssuer();
    this.now = opts.now ?? (() => Math.floor(Date.now() / 1000));
    this.signers = new Map(Object.entries(opts.signers ?? {}));
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
    const kind = env.switch().name;
    if (kind !== 'envelopeTypeTx' && kind !== 'envelopeTypeTxFeeBump') throw new MalformedXdr('only v1 and fee-bump transaction envelopes are supported');
    const outer = kind === 'envelopeTypeTxFeeBump' ? env.feeBump() : undefined;
    const v1 = outer ? outer.tx().innerTx().v1() : env.v1();
    const tx = v1.tx();
    const txHash = (type: number, body: Buffer) => (withHash ? sha256(Buffer.concat([this.networkId, Buffer.from([0, 0, 0, type]), body])) : ZERO32);
    const hashBytes = txHash(2, tx.toXDR());
    const ext = tx.ext();
    const parsed: Parsed = {
      envB64,
      tx,
      hash: (outer ? txHash(5, outer.tx().toXDR()) : hashBytes).toString('hex'),
      hashBytes,
      source: muxedToG(tx.sourceAccount()),
      seq: toBig(tx.seqNum()),
      signatures: v1.signatures(),
    };
    if (ext.switch() === 1) parsed.soroban = ext.sorobanData();
    if (outer) {
      const fb = outer.tx();
      parsed.feeBump = { feeSource: muxedToG(fb.feeSource()), fee: toBig(fb.fee()), hashBytes: txHash(5, fb.toXDR()), signatures: outer.signatures() };
    }
    return parsed;
  }

  // ------------------------------------------------------------- validation
  /** The inclusion fee (100 per operation, one more for a fee bump) plus the declared resource fee. */
  private minFee(p: Parsed): bigint {
    const ops = BigInt(Math.max(1, p.tx.operations().length)) + (p.feeBump ? 1n : 0n);
    return BASE_FEE * ops + (p.soroban ? toBig(p.soroban.resourceFee()) : 0n);
  }

  /** The fee bid: the outer fee of a fee bump, else the transaction's. */
  private feeBid(p: Parsed): bigint {
    return p.feeBump ? p.feeBump.fee : BigInt(p.tx.fee());
  }

  /** Whether `who` signed `hash` (with its master key, or its signer's key) among `signatures` (marking the one used). */
  private signed(who: string, hash: Buffer, signatures: xdr.DecoratedSignature[], used: Set<number>): boolean {
    const key = this.signers.get(who) ?? who;
    const hint = hintOf(key);
    for (const [i, s] of signatures.entries()) {
      if (used.has(i)) continue;
      if (Buffer.compare(Buffer.from(s.hint()), hint) === 0 && verifyEd25519(key, hash, s.signature())) {
        used.add(i);
        return true;
      }
    }
    return false;
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
    if (this.feeBid(p) < this.minFee(p)) return 'txInsufficientFee';
    const payer = p.feeBump ? this.accounts.get(p.feeBump.feeSource) : acc;
    if (!payer) return 'txNoAccount';
    if (payer.balance < this.minFee(p)) return 'txInsufficientBalance';
    if (p.feeBump && !this.signed(p.feeBump.feeSource, p.feeBump.hashBytes, p.feeBump.signatures, new Set())) return 'txBadAuth';
    // Signatures: every needed account signs with its master key (weight 1, thresholds 0 -> at least 1).
    const needed = new Set<string>([p.source]);
    for (const op of ops) {
      const src = op.sourceAccount();
      if (src) needed.add(muxedToG(src));
    }
    const used = new Set<number>();
    for (const who of needed) if (!this.signed(who, p.hashBytes, p.signatures, used)) return 'txBadAuth';
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
    for (const [i, p] of batch.entries()) applied.push(this.applyTx(p, seq, closeTime, i + 1));
    const prevHash = this.latest.hash;
    const hash = sha256(Buffer.concat([Buffer.from(prevHash, 'hex'), Buffer.from(`${seq}:${closeTime}:${applied.map((t) => t.hash).join(',')}`)])).toString(
      'hex',
    );
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
    const summary = p.tx.operations().map((op) => describeOp(op, p.source));
    const code = this.precheck(p, 0);
    if (code) {
      const result = txResult(code, 0n);
      return this.record(
        {
          ...base,
          successful: false,
          feeCharged: 0n,
          resultXdr: result.toXDR('base64'),
          resultMetaXdr: emptyMeta(p.soroban !== undefined),
          resultCodes: resultCodesFromXdr(result),
          contractEventsXdr: [],
          summary,
          touched: [p.source],
        },
        [],
      );
    }
    const acc = this.accounts.get(p.source)!;
    const fee = this.minFee(p) < this.feeBid(p) ? this.minFee(p) : this.feeBid(p);
    // A fee bump's fee source pays the fee; the inner source's sequence number advances.
    const payer = p.feeBump ? this.accounts.get(p.feeBump.feeSource)! : acc;
    payer.balance -= fee;
    payer.lastModified = ledger;
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
      const r = applyOp(this, view, op, src, p, ledger, closeTime, touched);
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
    const result = p.feeBump ? feeBumpResult(ok, fee, p.hashBytes, opResults) : txResult(ok ? 'txSuccess' : 'txFailed', fee, opResults);
    const meta = new xdr.TransactionMetaV4({
      ext: new xdr.ExtensionPoint(0),
      txChangesBefore: [],
      operations: ok ? opMetas : opMetas.map(() => new xdr.OperationMetaV2({ ext: new xdr.ExtensionPoint(0), changes: [], events: [] })),
      txChangesAfter: [],
      sorobanMeta: p.soroban
        ? new xdr.SorobanTransactionMetaV2({ ext: new xdr.SorobanTransactionMetaExt(0), returnValue: ok ? (returnValue ?? xdr.ScVal.scvVoid()) : null })
        : null,
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
        // An account a contract event names (the receiver of a token transfer: an escrow's release) was touched too.
        for (const t of e.topics)
          if (t.switch().name === 'scvAddress' && t.address().switch().name === 'scAddressTypeAccount') touched.add(scValToNative(t) as string);
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
    if (p.feeBump) rec.feeSource = p.feeBump.feeSource;
    return this.record(rec, eventRecords);
  }

  /** Adds an applied transaction (and its events) to the history. Also used when loading from disk. */
  record(rec: TxRecord, events: EventRecord[]): TxRecord {
    this.txs.set(rec.hash, rec);
    this.txOrder.push(rec.hash);
    for (const e of events) this.events.push(e);
    return rec;
  }

  // -------------------------------------------------------------- contracts
  /** Runs a contract call against a view (simulation or application). Throws HostError. */
  invoke(
    view: View,
    call: xdr.InvokeContractArgs,
    opts: { source: string; ledger: number; timestamp: number; authMode: 'record' | 'enforce'; authEntries: xdr.SorobanAuthorizationEntry[] },
  ): InvocationOutcome {
    return invoke(this, view, call, opts);
  }

  /** simulateTransaction: runs the single contract call without committing anything. */
  simulate(envB64: string): ReturnType<typeof simulate> {
    return simulate(this, () => this.now(), envB64);
  }

  // ---------------------------------------------------------------- reading
  ledgerEntry(key: xdr.LedgerKey): { entry: xdr.LedgerEntryData; lastModified: number } | undefined {
    return ledgerEntry(this, key);
  }

  /** Base64 LedgerHeader and LedgerCloseMeta of the latest ledger (getLatestLedger). */
  latestHeaderXdr(): { header: string; meta: string } {
    if (this.headerCache?.seq === this.latest.seq) return this.headerCache;
    const l = this.latest;
    this.headerCache = { seq: l.seq, ...ledgerHeaderXdr(l) };
    return this.headerCache;
  }

  /** The keypair-free view of a hosted contract's data, for the explorer. */
  contractData(contractId: string): DataEntry[] {
    const out: DataEntry[] = [];
    for (const e of this.data.values()) if (e.contractId === contractId) out.push(e);
    return out;
  }
}
