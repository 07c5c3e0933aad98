import { Address, TransactionBuilder, rpc, type xdr } from '@stellar/stellar-sdk';
import type { EscrowClient } from '@farebox/escrow';
import type { NetworkConfig, TxSigner } from '@farebox/stellar';
import { systemClock, type Clock } from '../clock.js';
import { GatewayError } from '../errors.js';

/** A signed transaction recorded before it is submitted (the exactly-once rule). */
export interface PendingTx {
  /** The step it performs, e.g. `deploy`, `fund:12`, `release`. */
  step: string;
  /** Hash of the signed transaction (hex): how the chain is asked about it. */
  hash: string;
  /** The signed envelope (base64): resubmitted as is while it can still apply. */
  xdr: string;
  at: string;
}

/** What the chain says about a transaction hash. */
export interface TxStatus {
  status: 'SUCCESS' | 'FAILED' | 'NOT_FOUND';
  returnValue?: xdr.ScVal;
}

/** The chain reads the exactly-once rule needs (Soroban RPC). */
export interface ChainProbe {
  transaction(hash: string): Promise<TxStatus>;
  /** The account's current sequence number. */
  sequence(address: string): Promise<bigint>;
}

/** Soroban RPC through @stellar/stellar-sdk's `rpc.Server`. */
export function createChainProbe(network: NetworkConfig): ChainProbe {
  const server = new rpc.Server(network.rpcUrl, { allowHttp: network.allowHttp });
  return {
    async transaction(hash) {
      const r = await server.getTransaction(hash);
      if (r.status === rpc.Api.GetTransactionStatus.SUCCESS) return { status: 'SUCCESS', ...(r.returnValue ? { returnValue: r.returnValue } : {}) };
      if (r.status === rpc.Api.GetTransactionStatus.FAILED) return { status: 'FAILED' };
      return { status: 'NOT_FOUND' };
    },
    async sequence(address) {
      const account = await server.getAccount(address);
      return BigInt(account.sequenceNumber());
    },
  };
}

/** Hash (hex) of a signed envelope. */
export function txHashOf(signedXdr: string, passphrase: string): string {
  return TransactionBuilder.fromXDR(signedXdr, passphrase).hash().toString('hex');
}

/**
 * True while a signed (not fee-bump) envelope can still be applied: its time
 * bounds are open and its source account's sequence has not passed it. When
 * false and the chain does not know its hash, it never will.
 */
export async function canStillApplyTx(probe: ChainProbe, signedXdr: string, passphrase: string): Promise<boolean> {
  const tx = TransactionBuilder.fromXDR(signedXdr, passphrase);
  if ('innerTransaction' in tx) return false;
  const maxTime = Number(tx.timeBounds?.maxTime ?? '0');
  // The network judges time bounds by its ledgers' close time, the machine's (never a clock a test moved ahead: that
  // would build a second transaction while the first can still apply).
  if (maxTime !== 0 && systemClock() / 1000 > maxTime) return false;
  const current = await probe.sequence(tx.source);
  return current < BigInt(tx.sequence);
}

export interface StepOutcome {
  hash: string;
  /** The contract a deploy created. */
  contractId?: string;
  /** True when the transaction was found already applied (a resumed step). */
  resumed: boolean;
}

export interface ExecuteStep {
  step: string;
  /** The step's intent left by an earlier attempt, if any. */
  pending: PendingTx | undefined;
  /** Asks the escrow API for the unsigned transaction. */
  build(): Promise<string>;
  signer: TxSigner;
  /** Persists the intent (or clears it with null) durably, before submission. */
  persist(pending: PendingTx): Promise<void>;
}

/**
 * Runs one on-chain step exactly once. The signed transaction and its hash
 * are persisted before submission; a retry first asks the chain about the
 * recorded hash: applied -> done (never sent again); not found and still
 * able to apply (time bounds open, sequence not consumed) -> the same signed
 * envelope is submitted again (the chain applies a transaction at most once);
 * failed or unable to ever apply -> a new transaction is built.
 */
export function createStepRunner(deps: { escrow: EscrowClient; probe: ChainProbe; passphrase: string; crashPoint?: (name: string) => void; now?: Clock }) {
  const now = deps.now ?? systemClock;
  const { escrow, probe, passphrase } = deps;
  const crash = deps.crashPoint ?? (() => undefined);

  function contractIdOf(status: TxStatus): string | undefined {
    if (!status.returnValue) return undefined;
    try {
      return Address.fromScVal(status.returnValue).toString();
    } catch {
      return undefined;
    }
  }

  const canStillApply = (signedXdr: string) => canStillApplyTx(probe, signedXdr, passphrase);

  async function submit(signedXdr: string, hash: string): Promise<{ ok: boolean; contractId?: string; message: string }> {
    let message = 'not applied';
    let contractId: string | undefined;
    try {
      const sent = await escrow.sendTransaction(signedXdr);
      message = sent.message;
      contractId = sent.contractId;
      if (sent.status === 'SUCCESS') return { ok: true, ...(contractId ? { contractId } : {}), message };
    } catch (e) {
      message = e instanceof Error ? e.message : String(e);
    }
    // The provider may have failed to answer after the network applied it: the chain decides.
    const status = await probe.transaction(hash).catch(() => ({ status: 'NOT_FOUND' }) as TxStatus);
    if (status.status === 'SUCCESS')
      return { ok: true, ...((contractId ?? contractIdOf(status)) ? { contractId: contractId ?? contractIdOf(status) } : {}), message };
    return { ok: false, message };
  }

  return async function execute(s: ExecuteStep): Promise<StepOutcome> {
    if (s.pending && s.pending.step === s.step) {
      const status = await probe.transaction(s.pending.hash);
      if (status.status === 'SUCCESS') {
        const contractId = contractIdOf(status);
        return { hash: s.pending.hash, resumed: true, ...(contractId ? { contractId } : {}) };
      }
      if (status.status === 'NOT_FOUND' && (await canStillApply(s.pending.xdr))) {
        const again = await submit(s.pending.xdr, s.pending.hash);
        if (again.ok) {
          crash(`submitted:${s.step}`);
          return { hash: s.pending.hash, resumed: true, ...(again.contractId ? { contractId: again.contractId } : {}) };
        }
        // Refused now: fall through and build a fresh transaction only if it can no longer apply.
        if (await canStillApply(s.pending.xdr)) throw new GatewayError('UPSTREAM', `${s.step}: ${again.message}`);
      }
    }
    const unsigned = await s.build();
    const signed = await s.signer.signTransaction(unsigned, passphrase);
    const hash = txHashOf(signed, passphrase);
    await s.persist({ step: s.step, hash, xdr: signed, at: new Date(now()).toISOString() });
    crash(`signed:${s.step}`);
    const sent = await submit(signed, hash);
    if (!sent.ok) throw new GatewayError('UPSTREAM', `${s.step}: ${sent.message}`);
    crash(`submitted:${s.step}`);
    return { hash, resumed: false, ...(sent.contractId ? { contractId: sent.contractId } : {}) };
  };
}

export type StepRunner = ReturnType<typeof createStepRunner>;
