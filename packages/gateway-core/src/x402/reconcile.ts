import { Address, nativeToScVal, rpc } from '@stellar/stellar-sdk';
import type { ExactIntent, Ledger } from '@farebox/ledger';
import type { NetworkConfig } from '@farebox/stellar';
import { authorizationOf, settledTransfer } from './transfer.js';
import { systemClock } from '../clock.js';

/** How long after its intent a settlement is left to record itself before the reconciler looks (ms). */
export const EXACT_RECONCILE_GRACE_MS = 120_000;
/** How often each gateway's reconciler runs (ms); also once at start. */
export const EXACT_RECONCILE_INTERVAL_MS = 60_000;
/** Pages of 100 events read per intent: more transfers than this from one payer to the treasury in its window leave it pending. */
const MAX_PAGES = 20;
/** Ledgers per `getEvents` range (an authorization valid for a day spans about 17,000). */
const WINDOW_LEDGERS = 5_000;

export interface ExactReconcilerOptions {
  ledger: Ledger;
  network: Pick<NetworkConfig, 'rpcUrl' | 'allowHttp' | 'passphrase' | 'x402Network'>;
  /** Intents written less than this long ago are left alone (default {@link EXACT_RECONCILE_GRACE_MS}). */
  graceMs?: number;
  /** How long an intent taken by one reconciler is left to it (default 60 s). */
  leaseMs?: number;
  /** The gateway's clock, epoch ms (default `Date.now`): which intents are old enough. */
  now?: () => number;
  /** One line per resolution (the gateway logs it at warn, `event: "x402-reconcile"`). */
  note(fields: Record<string, unknown>, message: string): void;
  /** Counts a resolution (`farebox_x402_reconciled_total{result}`). */
  count?(result: 'settled' | 'never_settled'): void;
  log(message: string, err?: unknown): void;
}

/** What one intent came to. */
export type IntentResolution =
  | { state: 'settled'; txHash: string; amount: bigint; feeCharged: bigint; recorded: boolean }
  | { state: 'never_settled'; resolved: boolean }
  | { state: 'pending'; reason: string };

export interface ExactReconciler {
  /** One pass over the pending intents old enough; the counts of what it resolved. */
  pass(): Promise<{ settled: number; neverSettled: number; pending: number }>;
  /** Asks the chain about one intent and records what it finds. */
  resolve(intent: ExactIntent): Promise<IntentResolution>;
  /** Runs a pass now and every {@link EXACT_RECONCILE_INTERVAL_MS}. */
  start(): void;
  stop(): void;
}

/**
 * The reconciler of `exact` settlements whose record was interrupted (a crash
 * between the submission and the record, a database outage, an answer that
 * never came). For each intent still pending after the grace it asks the
 * network's RPC for the token's `transfer` events from the payer to the
 * treasury in the ledgers from the intent's to the authorization's expiration
 * (`getEvents`, which the devnet and the real RPC both serve), and reads each one's transaction: the one carrying
 * the payer's authorization with the intent's nonce is the payment (the
 * network accepts a nonce once), recorded once with its hash and the amount
 * it moved, in the statement that closes the intent. When the authorization's
 * expiration ledger has passed with no such transfer, the intent is closed
 * `never_settled`. Several gateways may run it at once: each intent is taken
 * by one (a lease), and a payment is recorded once per transaction anyway.
 */
export function createExactReconciler(o: ExactReconcilerOptions): ExactReconciler {
  const server = new rpc.Server(o.network.rpcUrl, { allowHttp: o.network.allowHttp });
  const now = o.now ?? systemClock;
  const graceMs = o.graceMs ?? EXACT_RECONCILE_GRACE_MS;
  const leaseMs = o.leaseMs ?? 60_000;
  let timer: ReturnType<typeof setInterval> | undefined;
  let running: Promise<unknown> | undefined;

  /**
   * The transaction that used the intent's authorization, if the network has it. Only ledgers from the intent's to
   * the authorization's expiration can hold it: they are read in windows (`startLedger`/`endLedger`, then the cursor
   * while a page is full), so `complete` means every one of them up to `latestLedger` was read.
   */
  async function search(
    intent: ExactIntent,
  ): Promise<{ found?: rpc.Api.GetSuccessfulTransactionResponse & { hash: string }; latestLedger: number; complete: boolean }> {
    const head = [nativeToScVal('transfer', { type: 'symbol' }), Address.fromString(intent.payer).toScVal(), Address.fromString(intent.payTo).toScVal()].map(
      (v) => v.toXDR('base64'),
    );
    // A token's transfer has three topics, or four with the asset's name (SEP-41 and the asset contract since protocol 23).
    const filters: rpc.Api.EventFilter[] = [{ type: 'contract', contractIds: [intent.asset], topics: [head, [...head, '*']] }];
    const seen = new Set<string>();
    const latestLedger = (await server.getLatestLedger()).sequence;
    const last = Math.min(intent.expirationLedger, latestLedger);
    let pages = 0;
    for (let from = intent.startLedger; from <= last; from += WINDOW_LEDGERS) {
      const endLedger = Math.min(from + WINDOW_LEDGERS, last + 1);
      let cursor: string | undefined;
      for (;;) {
        if (++pages > MAX_PAGES) return { latestLedger, complete: false };
        const r = await server.getEvents(cursor ? { cursor, filters, limit: 100 } : { startLedger: from, endLedger, filters, limit: 100 });
        for (const event of r.events) {
          if (event.ledger >= endLedger || seen.has(event.txHash)) continue;
          seen.add(event.txHash);
          const info = await server.getTransaction(event.txHash);
          if (info.status !== rpc.Api.GetTransactionStatus.SUCCESS) continue;
          if (authorizationOf(info.envelopeXdr, o.network.passphrase, intent.payer)?.nonce === intent.nonce) {
            return { found: { ...info, hash: event.txHash }, latestLedger, complete: true };
          }
        }
        const beyond = r.events.some((e) => e.ledger >= endLedger);
        if (r.events.length < 100 || beyond) break;
        cursor = r.cursor;
      }
    }
    return { latestLedger, complete: true };
  }

  async function resolve(intent: ExactIntent): Promise<IntentResolution> {
    const { found, latestLedger, complete } = await search(intent);
    if (found) {
      const moved = settledTransfer(found, { asset: intent.asset, from: intent.payer, to: intent.payTo });
      if (moved.amount <= 0n) return { state: 'pending', reason: `transaction ${found.hash} used the authorization but moved nothing into the treasury` };
      const { recorded, payment } = await o.ledger.recordExactPayment({
        txHash: found.hash,
        network: intent.network,
        asset: intent.asset,
        payer: intent.payer,
        payTo: intent.payTo,
        service: intent.service,
        publisherOwner: intent.publisherOwner,
        amount: moved.amount,
        feeCharged: moved.feeCharged,
        intentNonce: intent.nonce,
        // A settle-first payment's earning is held for its refund window, as the facilitator's own record holds it.
        holdMs: intent.holdMs ?? null,
      });
      return { state: 'settled', txHash: payment.txHash, amount: payment.amount, feeCharged: payment.feeCharged, recorded };
    }
    if (!complete) return { state: 'pending', reason: `more than ${MAX_PAGES * 100} transfers from the payer to the treasury to read` };
    if (latestLedger <= intent.expirationLedger)
      return { state: 'pending', reason: `no transfer yet; the authorization is valid until ledger ${intent.expirationLedger} (now ${latestLedger})` };
    const { resolved } = await o.ledger.exactIntents.close(intent.payer, intent.nonce, {
      state: 'never_settled',
      error: `the authorization expired at ledger ${intent.expirationLedger} with no transfer on chain (ledgers ${intent.startLedger} to ${intent.expirationLedger} read)`,
    });
    return { state: 'never_settled', resolved };
  }

  async function pass() {
    const at = now();
    const due = await o.ledger.exactIntents.due({ olderThan: new Date(at - graceMs), now: new Date(at), leaseMs });
    const counts = { settled: 0, neverSettled: 0, pending: 0 };
    for (const intent of due) {
      const fields = {
        payer: intent.payer,
        nonce: intent.nonce,
        service: intent.service,
        owner: intent.publisherOwner,
        intentAmount: intent.amount.toString(),
      };
      try {
        const r = await resolve(intent);
        if (r.state === 'settled' && r.recorded) {
          counts.settled++;
          o.count?.('settled');
          o.note(
            { ...fields, result: 'settled', txHash: r.txHash, amount: r.amount.toString(), feeCharged: r.feeCharged.toString() },
            `x402 payment recorded by reconciliation: ${r.amount} base units to ${intent.service} (transaction ${r.txHash})`,
          );
        } else if (r.state === 'never_settled' && r.resolved) {
          counts.neverSettled++;
          o.count?.('never_settled');
          o.note({ ...fields, result: 'never_settled' }, `x402 settlement never happened: the authorization expired unused; nothing recorded`);
        } else if (r.state === 'pending') counts.pending++;
      } catch (err) {
        counts.pending++;
        o.log(`x402 reconciliation of payer ${intent.payer}, nonce ${intent.nonce} (${intent.service}) failed; it is tried again`, err);
      }
    }
    return counts;
  }

  const guarded = () => {
    running ??= pass()
      .catch((err) => o.log('x402 reconciliation failed', err))
      .finally(() => (running = undefined));
    return running;
  };

  return {
    pass,
    resolve,
    start() {
      if (timer) return;
      void guarded();
      timer = setInterval(() => void guarded(), EXACT_RECONCILE_INTERVAL_MS);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}
