import { createHash, randomUUID } from 'node:crypto';
import { Asset, BASE_FEE, Horizon, Memo, Operation, TransactionBuilder } from '@stellar/stellar-sdk';
import { BALANCE_CAP, TOPUP_MAX, hashRequest, type Ledger, type WalletPayment } from '@farebox/ledger';
import { formatAmount, parseAmount, toJsonInteger, toUsd } from '@farebox/protocol';
import type { NetworkConfig } from '@farebox/stellar';
import type { WalletProvider } from '@farebox/wallets';
import { systemClock, type Clock } from './clock.js';
import { GatewayError } from './errors.js';
import { translated } from './ledger-errors.js';
import { canStillApplyTx, type ChainProbe } from './settlement/onchain.js';

/**
 * How `POST /v1/topup` adds credits:
 * - `wallet`: the amount moves in USDC from the account's own wallet to the
 *   treasury on chain, and is credited once the network confirms it;
 * - `free`: unpaid credits (a faucet), only where `FAREBOX_FREE_TOPUPS=true`
 *   (the default on the local network; refused at start on mainnet).
 */
export type TopupMode = 'wallet' | 'free';

export interface TopupsOptions {
  ledger: Ledger;
  wallets: WalletProvider;
  network: NetworkConfig;
  treasuryAddress: string;
  probe: ChainProbe;
  mode: TopupMode;
  /** The wallet's USDC in base units; `null` while the wallet is not set up on chain (no account or trustline). */
  walletUsdc(address: string): Promise<bigint | null>;
  /** Test hook: called at `topup:signed` and `topup:submitted` (the crash tests kill the process there). */
  crashPoint?: (name: string) => void;
  log?(message: string, err?: unknown): void;
  /** The gateway's clock (default `Date.now`): a free top-up's time, and the age after which an unsigned payment is given up. */
  now?: Clock;
}

/** The account a top-up is for. */
export interface TopupAccount {
  id: string;
  walletAddress: string;
}

/** The `topup` object of `POST /v1/topup` (a Transaction item). */
export interface TopupView {
  id: string;
  type: 'topup';
  amount_lamports: number;
  amount_base_units: number;
  amount_usd: number;
  service: null;
  tx_signature: string | null;
  explorer_url: string | null;
  status: 'completed' | 'pending' | 'failed';
  paid_with: 'wallet' | null;
  note: string | null;
  /** A top-up is no call: null (the Transaction item's fields). */
  callId: null;
  idempotencyKey: null;
  created_at: string;
}

const paymentView = (p: WalletPayment, hash: string | null): TopupView => ({
  id: p.id,
  type: 'topup',
  amount_lamports: toJsonInteger(p.amount),
  amount_base_units: toJsonInteger(p.amount),
  amount_usd: toUsd(p.amount),
  service: null,
  tx_signature: p.txHash ?? hash,
  explorer_url: p.explorerUrl,
  status: p.state,
  paid_with: 'wallet',
  note: p.error,
  callId: null,
  idempotencyKey: null,
  created_at: p.createdAt.toISOString(),
});

/** Horizon's result codes of a refused submission, e.g. `tx_failed [op_underfunded]`. */
function horizonReason(err: unknown): string {
  const codes = (err as { response?: { data?: { extras?: { result_codes?: { transaction?: string; operations?: string[] } } } } })?.response?.data?.extras
    ?.result_codes;
  if (codes) return [codes.transaction, ...(codes.operations ?? [])].filter(Boolean).join(' ');
  return err instanceof Error ? err.message : String(err);
}

/**
 * The memo of the payment a wallet payment record sends: SHA-256 of
 * `farebox wallet payment <record id>`. It ties each envelope to one record,
 * so two records never sign the same envelope (same source, sequence and
 * amount would otherwise hash the same), and the chain audit can tell which
 * record a transaction paid.
 */
export function walletPaymentMemo(paymentId: string): Buffer {
  return createHash('sha256').update(`farebox wallet payment ${paymentId}`).digest();
}

/** The serialised (one at a time per key) runner: one wallet's payments are built and submitted in order. */
function keyedQueue() {
  const tails = new Map<string, Promise<unknown>>();
  return <T>(key: string, fn: () => Promise<T>): Promise<T> => {
    const run = (tails.get(key) ?? Promise.resolve()).then(fn, fn);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    tails.set(key, tail);
    void tail.then(() => {
      if (tails.get(key) === tail) tails.delete(key);
    });
    return run;
  };
}

/** Refusals after which the envelope can never apply (anything else may still be in flight). */
const DEFINITIVE = /tx_bad_seq|tx_failed|tx_too_late|tx_insufficient_balance|tx_no_source_account|tx_bad_auth|op_/;

/**
 * Top-ups: paid on chain from the account's wallet (exactly once across
 * retries and crashes: the signed payment and its hash are recorded before it
 * is submitted, and the chain is asked about that hash before anything is
 * sent again), or free where the configuration allows it.
 */
export function createTopups(o: TopupsOptions) {
  const log = o.log ?? (() => undefined);
  const crash = o.crashPoint ?? (() => undefined);
  const now = o.now ?? systemClock;
  const horizon = new Horizon.Server(o.network.horizonUrl, { allowHttp: o.network.allowHttp });
  const usdc = new Asset(o.network.usdc.code, o.network.usdc.issuer);
  const inOrder = keyedQueue();

  async function submit(signedXdr: string, hash: string): Promise<{ applied: boolean; definitive: boolean; reason: string }> {
    let reason = 'not applied';
    try {
      await horizon.submitTransaction(TransactionBuilder.fromXDR(signedXdr, o.network.passphrase));
      return { applied: true, definitive: true, reason: '' };
    } catch (err) {
      reason = horizonReason(err);
    }
    // Horizon may have failed to answer after the network applied it: the chain decides.
    const status = await o.probe.transaction(hash).catch(() => ({ status: 'NOT_FOUND' as const }));
    if (status.status === 'SUCCESS') return { applied: true, definitive: true, reason: '' };
    return { applied: false, definitive: status.status === 'FAILED' || DEFINITIVE.test(reason), reason };
  }

  /**
   * Moves `amount` USDC from the wallet to the treasury and credits it, once
   * per `reference`, in the wallet's turn (`inTurn`: the caller holds it): a repeat finds the first record and finishes it (or
   * answers what became of it) instead of paying again. Resolves with the
   * completed payment; throws when nothing was paid (the record says why) or
   * when the payment is submitted but not confirmed yet (it stays pending and
   * is credited by {@link reconcile} once the chain has it).
   */
  async function payFromWallet(account: TopupAccount, amount: bigint, reference: string, options: { inTurn?: boolean } = {}): Promise<WalletPayment> {
    const record = await o.ledger.recordWalletPayment(account.id, { kind: 'topup', callId: reference, amount });
    if (record.amount !== amount) throw new GatewayError('CONFLICT', 'idempotency key reused with a different request');
    if (record.state === 'completed') return record;
    if (record.state === 'failed') throw failedBefore(record);
    // One payment of a wallet at a time on this gateway: each is built on the sequence the one before left, and
    // sees the USDC the one before left. (Gateways sharing a database may still race: see tx_bad_seq below.)
    return options.inTurn ? sendPayment(account, record) : inOrder(account.walletAddress, () => sendPayment(account, record));
  }

  /**
   * A retry (same Idempotency-Key or call) of a top-up that already failed gets that failure again: a wallet that
   * held too little is the same 402 as the first answer; anything else the network refused, a 500.
   */
  function failedBefore(record: WalletPayment): GatewayError {
    const error = record.error ?? 'not applied';
    if (error.startsWith('insufficient USDC in your wallet')) return new GatewayError('INSUFFICIENT_BALANCE', error);
    return new GatewayError('UPSTREAM', `the top-up failed on chain: ${error}; nothing was charged (retry with a new Idempotency-Key)`);
  }

  /** The credited payment, or the failure its record now says. */
  async function confirmed(p: WalletPayment, hash: string): Promise<WalletPayment> {
    const { payment } = await o.ledger.resolveWalletPayment(p.id, { state: 'completed', txHash: hash, explorerUrl: o.network.explorer.tx(hash) });
    if (payment.state !== 'completed') throw new GatewayError('UPSTREAM', `the top-up was not credited: ${payment.error ?? 'not applied'}`);
    return payment;
  }

  async function sendPayment(account: TopupAccount, first: WalletPayment): Promise<WalletPayment> {
    const record = await o.ledger.getWalletPayment(first.id);
    if (record.state === 'completed') return record;
    if (record.state === 'failed') throw failedBefore(record);
    const amount = record.amount;
    const earlier = typeof record.data.xdr === 'string' && typeof record.data.hash === 'string' ? { xdr: record.data.xdr, hash: record.data.hash } : undefined;
    if (earlier) {
      const status = await o.probe.transaction(earlier.hash).catch(() => ({ status: 'NOT_FOUND' as const }));
      if (status.status === 'SUCCESS') return confirmed(record, earlier.hash);
      if (status.status === 'NOT_FOUND' && (await canStillApplyTx(o.probe, earlier.xdr, o.network.passphrase))) {
        const again = await submit(earlier.xdr, earlier.hash);
        if (again.applied) return confirmed(record, earlier.hash);
        if (!again.definitive)
          throw new GatewayError('UPSTREAM', 'the top-up payment is submitted and not confirmed yet; it is credited once the network confirms it');
      }
      // The earlier envelope can never apply: a new one is built below.
    }

    for (let attempt = 1; ; attempt++) {
      let source;
      try {
        source = await horizon.loadAccount(account.walletAddress);
      } catch (err) {
        await o.ledger.resolveWalletPayment(record.id, { state: 'failed', error: `wallet not found on chain: ${horizonReason(err)}` });
        throw new GatewayError('UPSTREAM', 'the wallet is not set up on chain yet; nothing was charged');
      }
      // The USDC there now (after this wallet's earlier payments), not what the request saw before it queued.
      const line = source.balances.find((b) => 'asset_code' in b && b.asset_code === usdc.code && 'asset_issuer' in b && b.asset_issuer === usdc.issuer);
      const held = line ? parseAmount(line.balance) : 0n;
      if (held < amount) {
        const message = insufficientWallet(account, held, amount);
        await o.ledger.resolveWalletPayment(record.id, { state: 'failed', error: message });
        throw new GatewayError('INSUFFICIENT_BALANCE', message);
      }
      const tx = new TransactionBuilder(source, { fee: BASE_FEE, networkPassphrase: o.network.passphrase })
        .addOperation(Operation.payment({ destination: o.treasuryAddress, asset: usdc, amount: formatAmount(amount) }))
        .addMemo(Memo.hash(walletPaymentMemo(record.id)))
        .setTimeout(120)
        .build();
      const signed = await o.wallets.sign(account.walletAddress, tx.toXDR(), o.network.passphrase);
      const hash = TransactionBuilder.fromXDR(signed, o.network.passphrase).hash().toString('hex');
      await o.ledger.noteWalletPayment(record.id, { data: { hash, xdr: signed } });
      crash('topup:signed');
      const sent = await submit(signed, hash);
      if (sent.applied) {
        crash('topup:submitted');
        return confirmed(record, hash);
      }
      if (!sent.definitive)
        throw new GatewayError('UPSTREAM', 'the top-up payment is submitted and not confirmed yet; it is credited once the network confirms it');
      // Another gateway (or the wallet's owner) used the sequence number first: this envelope can never apply, so a
      // new one on the next sequence number pays instead (a few times, then the request fails with nothing charged).
      if (/tx_bad_seq/.test(sent.reason) && attempt < 4 && !(await canStillApplyTx(o.probe, signed, o.network.passphrase))) continue;
      await o.ledger.resolveWalletPayment(record.id, { state: 'failed', error: `refused by the network: ${sent.reason}` });
      throw new GatewayError('UPSTREAM', `the top-up payment was refused by the network (${sent.reason}); nothing was charged`);
    }
  }

  const insufficientWallet = (account: TopupAccount, held: bigint, amount: bigint) =>
    `insufficient USDC in your wallet: ${formatAmount(held, { trim: true })} USDC there, ${formatAmount(amount, { trim: true })} needed. ` +
    `Fund it by sending USDC (${o.network.name}, issuer ${o.network.usdc.issuer}) to ${account.walletAddress}; no memo needed`;

  /** Checks the amount, the cap and the wallet before anything moves. */
  async function precheck(account: TopupAccount, amount: bigint): Promise<void> {
    const credits = await translated(() => o.ledger.balance(account.id));
    if (credits.aggregated + amount > BALANCE_CAP) throw new GatewayError('BAD_REQUEST', 'balance cap exceeded (max $10000)');
    if (o.mode === 'free') return;
    const wallet = await o.walletUsdc(account.walletAddress).catch(() => {
      throw new GatewayError('UNAVAILABLE', 'the settlement network is unavailable; try again shortly');
    });
    if (wallet === null) {
      throw new GatewayError('UNAVAILABLE', `your wallet ${account.walletAddress} is still being set up on chain; try again in a moment`, undefined, {
        'Retry-After': '5',
      });
    }
    if (wallet < amount) {
      throw new GatewayError('INSUFFICIENT_BALANCE', insufficientWallet(account, wallet, amount));
    }
  }

  async function run(account: TopupAccount, amount: bigint, reference: string): Promise<TopupView> {
    // A retry of a paid top-up already under way (submitted, not confirmed; or cut off by a crash) finishes
    // that payment: the wallet has paid already, so checking its balance or the cap again would refuse it wrongly.
    const started =
      o.mode === 'wallet' &&
      (await o.ledger.db.query(`SELECT 1 FROM wallet_payments WHERE account_id = $1 AND call_id = $2 AND kind = 'topup'`, [account.id, reference])).rows
        .length > 0;
    if (!started) await precheck(account, amount);
    if (o.mode === 'free') {
      await translated(() => o.ledger.topup(account.id, amount, { reference: `free:${reference}`, once: true }));
      return {
        id: reference,
        type: 'topup',
        amount_lamports: toJsonInteger(amount),
        amount_base_units: toJsonInteger(amount),
        amount_usd: toUsd(amount),
        service: null,
        tx_signature: null,
        explorer_url: null,
        status: 'completed',
        paid_with: null,
        note: 'free',
        callId: null,
        idempotencyKey: null,
        created_at: new Date(now()).toISOString(),
      };
    }
    const paid = await translated(() => payFromWallet(account, amount, reference));
    return paymentView(paid, null);
  }

  return {
    mode: o.mode,
    payFromWallet,
    /**
     * Runs `fn` in the wallet's turn: one payment from a wallet at a time on
     * this gateway (top-ups and wallet-path calls alike). Inside it, pay with
     * `payFromWallet(..., { inTurn: true })`.
     */
    inWalletTurn: <T>(walletAddress: string, fn: () => Promise<T>): Promise<T> => inOrder(walletAddress, fn),

    /**
     * `POST /v1/topup` for an amount already validated (0 < amount <= 1,000
     * USD); `answer` builds the response from the top-up (the new balance).
     * With an `Idempotency-Key` the top-up happens once: the same key and
     * amount answer the first response, another amount `409`.
     */
    async topup<R>(account: TopupAccount, amount: bigint, idempotencyKey: string | undefined, answer: (topup: TopupView) => Promise<R>): Promise<R> {
      if (amount <= 0n || amount > TOPUP_MAX) throw new GatewayError('BAD_REQUEST', 'invalid amount (must be 0 < n <= 1000)');
      if (idempotencyKey === undefined) return answer(await run(account, amount, `topup:${randomUUID()}`));
      const hash = hashRequest({ op: 'topup', amount: amount.toString() });
      // A paid top-up waits for the network's confirmation (seconds): the key is leased for longer.
      const r = await translated(() =>
        o.ledger.withIdempotency(account.id, `topup:${idempotencyKey}`, hash, async () => answer(await run(account, amount, `topup:key:${idempotencyKey}`)), {
          leaseMs: 180_000,
        }),
      );
      return r.response;
    },

    /** Credits wallet top-ups a crash or a slow network left pending once the chain has them; fails the ones that can never apply. */
    async reconcile(): Promise<{ credited: number; failed: number }> {
      let credited = 0;
      let failed = 0;
      for (const p of await o.ledger.pendingWalletPayments()) {
        if (p.kind !== 'topup') continue;
        const hash = typeof p.data.hash === 'string' ? p.data.hash : undefined;
        const xdr = typeof p.data.xdr === 'string' ? p.data.xdr : undefined;
        try {
          if (hash) {
            const status = await o.probe.transaction(hash);
            if (status.status === 'SUCCESS') {
              const r = await o.ledger.resolveWalletPayment(p.id, { state: 'completed', txHash: hash, explorerUrl: o.network.explorer.tx(hash) });
              if (r.applied && r.payment.state === 'completed') credited++;
              else if (r.applied) failed++;
              continue;
            }
            if (status.status === 'NOT_FOUND' && xdr && (await canStillApplyTx(o.probe, xdr, o.network.passphrase))) continue;
            await o.ledger.resolveWalletPayment(p.id, { state: 'failed', error: 'interrupted: the payment was never applied on chain' });
            failed++;
          } else if (now() - p.createdAt.getTime() > 10 * 60_000) {
            // Recorded, never signed: nothing can have moved.
            await o.ledger.resolveWalletPayment(p.id, { state: 'failed', error: 'interrupted before it was sent' });
            failed++;
          }
        } catch (err) {
          log(`reconciling wallet top-up ${p.id} failed`, err);
        }
      }
      return { credited, failed };
    },
  };
}

export type Topups = ReturnType<typeof createTopups>;
