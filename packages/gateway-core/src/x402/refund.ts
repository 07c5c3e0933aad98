import { createHash } from 'node:crypto';
import { Asset, BASE_FEE, Horizon, Keypair, Memo, Operation, StrKey, TransactionBuilder } from '@stellar/stellar-sdk';
import { exactRefunds, type ExactRefund, type ExactRefundRefusal, type Ledger } from '@farebox/ledger';
import { EXACT_REFUND_MAX_SKEW_MS, exactRefundMessage, formatAmount } from '@farebox/protocol';
import type { NetworkConfig, TxSigner } from '@farebox/stellar';
import { GatewayError } from '../errors.js';
import type { TreasuryQueue } from '../runtime/treasury-queue.js';
import { enforceRateLimit, type RateLimitStore } from '../security/rate-limit.js';
import { canStillApplyTx, createChainProbe, type ChainProbe } from '../settlement/onchain.js';
import type { X402Settings } from './config.js';
import type { FacilitatorAnswer } from './facilitator.js';
import { systemClock } from '../clock.js';

/** How long after its settlement a payment may be refunded by default (ms; `FAREBOX_X402_REFUND_WINDOW`). */
export const EXACT_REFUND_WINDOW_MS = 10 * 60_000;
/** How long a refund is left to the request that opened it before the reconciler finishes it (ms). */
export const EXACT_REFUND_GRACE_MS = 60_000;
/** Refusals after which a refund envelope can never apply (anything else may still be in flight). */
const DEFINITIVE = /tx_bad_seq|tx_failed|tx_too_late|tx_insufficient_balance|tx_no_source_account|tx_bad_auth|op_/;

export interface ExactRefundsOptions {
  ledger: Ledger;
  network: NetworkConfig;
  /** The platform treasury: every refund is a payment from it, in its queue. */
  treasury: TxSigner;
  treasuryQueue: TreasuryQueue;
  settings: Pick<X402Settings, 'enabled' | 'rateLimits'> & Partial<Pick<X402Settings, 'refundWindowMs'>>;
  rateLimits?: RateLimitStore;
  /** Test hook of the crash tests: `x402:refund-intent` (reversed and recorded, nothing signed), `x402:refund-submitted` (on chain, not closed). */
  crashPoint?: (name: string) => void;
  note(fields: Record<string, unknown>, message: string): void;
  log(message: string, err?: unknown): void;
  /** Epoch ms (default `Date.now`): a request's timestamp and which refunds are due. */
  now?: () => number;
  graceMs?: number;
  probe?: ChainProbe;
}

/** The refusals of `POST /x402/refund`: status, reason, message. */
const REFUSED: Record<ExactRefundRefusal, [number, string]> = {
  unknown_payment: [404, 'no exact payment is recorded with this transaction'],
  other_service: [409, 'this payment did not pay this service'],
  not_owner: [403, "the request is not signed by the owner of the payment's service"],
  exists: [409, 'this payment has a refund already: a payment is refunded once'],
  paid_out: [409, "this payment's earning is in a settlement batch already (paid out to the owner): it can no longer be refunded here"],
  window_closed: [409, 'this payment was settled more than <window> ago: it can no longer be refunded here'],
};

class Refused extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

/** The memo of a refund: SHA-256 of `farebox x402 refund <payment transaction>` (the chain tells which payment it refunds). */
export function refundMemo(paymentTxHash: string): Buffer {
  return createHash('sha256').update(`farebox x402 refund ${paymentTxHash.toLowerCase()}`).digest();
}

function horizonReason(err: unknown): string {
  const codes = (err as { response?: { data?: { extras?: { result_codes?: { transaction?: string; operations?: string[] } } } } })?.response?.data?.extras
    ?.result_codes;
  if (codes) return [codes.transaction, ...(codes.operations ?? [])].filter(Boolean).join(' ');
  return err instanceof Error ? err.message : String(err);
}

function parse(body: unknown): { transaction: string; service: string; timestamp: number; signature: Buffer } {
  const b = (body ?? {}) as Record<string, unknown>;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Refused(400, 'invalid_payload', 'the body must be a JSON object');
  if (typeof b.transaction !== 'string' || !/^[0-9a-fA-F]{64}$/.test(b.transaction))
    throw new Refused(400, 'invalid_payload', 'transaction must be the settlement transaction hash (64 hex characters)');
  if (typeof b.service !== 'string' || b.service === '' || b.service.length > 64)
    throw new Refused(400, 'invalid_payload', 'service must name the service paid');
  if (typeof b.timestamp !== 'number' || !Number.isSafeInteger(b.timestamp) || b.timestamp <= 0)
    throw new Refused(400, 'invalid_payload', 'timestamp must be the time of the request, epoch milliseconds');
  if (typeof b.signature !== 'string' || !/^[A-Za-z0-9+/]{86}==$/.test(b.signature))
    throw new Refused(400, 'invalid_payload', 'signature must be the base64 ed25519 signature (64 bytes) of the refund message');
  return { transaction: b.transaction.toLowerCase(), service: b.service, timestamp: b.timestamp, signature: Buffer.from(b.signature, 'base64') };
}

/**
 * Refunds of x402 `exact` payments (`POST /x402/refund`): a service that
 * settled a payment before its handler ran and then failed asks, signed by
 * its owner's key, for the payment to go back. The ledger reverses the
 * earning and writes the refund's intent in one statement (once per payment,
 * within {@link EXACT_REFUND_WINDOW_MS} of the settlement, before a cycle
 * claimed the earning); then the treasury pays the amount back to the payer,
 * in the treasury's queue, the signed transaction recorded before it is
 * submitted. A refund a crash or an outage left pending is finished by
 * {@link ExactRefunds.pass} (every gateway, at start and every minute): the
 * recorded transaction is confirmed from the chain, submitted again while it
 * can still apply, or replaced when it never can.
 */
export function createExactRefunds(o: ExactRefundsOptions) {
  const now = o.now ?? systemClock;
  const x402Network = o.network.x402Network as string;
  const probe = o.probe ?? createChainProbe(o.network);
  const horizon = new Horizon.Server(o.network.horizonUrl, { allowHttp: o.network.allowHttp });
  const usdc = new Asset(o.network.usdc.code, o.network.usdc.issuer);
  const crash = o.crashPoint ?? (() => undefined);
  const db = o.ledger.db;
  const graceMs = o.graceMs ?? EXACT_REFUND_GRACE_MS;
  const windowMs = o.settings.refundWindowMs ?? EXACT_REFUND_WINDOW_MS;
  let timer: ReturnType<typeof setInterval> | undefined;
  let running: Promise<unknown> | undefined;

  async function submit(signedXdr: string, hash: string): Promise<{ applied: boolean; definitive: boolean; reason: string }> {
    let reason = 'not applied';
    try {
      await horizon.submitTransaction(TransactionBuilder.fromXDR(signedXdr, o.network.passphrase));
      return { applied: true, definitive: true, reason: '' };
    } catch (err) {
      reason = horizonReason(err);
    }
    // Horizon may have failed to answer after the network applied it: the chain decides.
    const status = await probe.transaction(hash).catch(() => ({ status: 'NOT_FOUND' as const }));
    if (status.status === 'SUCCESS') return { applied: true, definitive: true, reason: '' };
    return { applied: false, definitive: status.status === 'FAILED' || DEFINITIVE.test(reason), reason };
  }

  async function closed(refund: ExactRefund, hash: string): Promise<ExactRefund> {
    const { refund: after } = await exactRefunds.complete(db, refund.paymentTxHash, hash);
    o.note(
      { payment: refund.paymentTxHash, refund: hash, service: refund.service, payer: refund.payer, amount: refund.amount.toString() },
      `x402 payment refunded: ${refund.amount} base units back to ${refund.payer}`,
    );
    return after ?? refund;
  }

  /** Pays a pending refund, exactly once, in the treasury's turn; resolves with it refunded, throws while it is not. */
  function finish(paymentTxHash: string): Promise<ExactRefund> {
    return o.treasuryQueue.run(`refund of x402 payment ${paymentTxHash}`, async () => {
      const refund = await exactRefunds.get(db, paymentTxHash);
      if (!refund) throw new GatewayError('NOT_FOUND', `no refund of x402 payment ${paymentTxHash}`);
      if (refund.state === 'refunded') return refund;
      if (refund.signed) {
        const { hash, xdr } = refund.signed;
        const status = await probe.transaction(hash);
        if (status.status === 'SUCCESS') return closed(refund, hash);
        if (status.status === 'NOT_FOUND' && (await canStillApplyTx(probe, xdr, o.network.passphrase))) {
          const again = await submit(xdr, hash);
          if (again.applied) return closed(refund, hash);
          if (!again.definitive || (await canStillApplyTx(probe, xdr, o.network.passphrase)))
            throw new GatewayError('UPSTREAM', `refund transaction ${hash} is not confirmed yet (${again.reason}); it is finished from the chain`);
        }
        // The recorded envelope failed or can never apply: a new one pays instead.
      }
      const source = await horizon.loadAccount(o.treasury.publicKey);
      const tx = new TransactionBuilder(source, { fee: BASE_FEE, networkPassphrase: o.network.passphrase })
        .addOperation(Operation.payment({ destination: refund.payer, asset: usdc, amount: formatAmount(refund.amount) }))
        .addMemo(Memo.hash(refundMemo(refund.paymentTxHash)))
        .setTimeout(120)
        .build();
      const signed = await o.treasury.signTransaction(tx.toXDR(), o.network.passphrase);
      const hash = TransactionBuilder.fromXDR(signed, o.network.passphrase).hash().toString('hex');
      const { noted } = await exactRefunds.note(db, refund.paymentTxHash, { hash, xdr: signed });
      if (!noted) return (await exactRefunds.get(db, paymentTxHash)) ?? refund;
      const sent = await submit(signed, hash);
      if (!sent.applied) {
        await exactRefunds.failAttempt(db, refund.paymentTxHash, `refund transaction ${hash}: ${sent.reason}`).catch(() => undefined);
        throw new GatewayError('UPSTREAM', `the refund transaction was not applied (${sent.reason}); it is tried again from the chain`);
      }
      crash('x402:refund-submitted');
      return closed(refund, hash);
    });
  }

  async function request(body: unknown, ip: string): Promise<FacilitatorAnswer> {
    if (!o.settings.enabled) throw new Refused(503, 'facilitator_unavailable', 'the x402 facilitator is off on this gateway (FAREBOX_X402_FACILITATOR)');
    if (o.rateLimits) {
      try {
        await enforceRateLimit(o.rateLimits, o.settings.rateLimits.ip, ip);
      } catch (err) {
        if (err instanceof GatewayError && err.code === 'RATE_LIMITED') throw new Refused(429, 'rate_limited', err.message, {}, err.headers);
        throw err;
      }
    }
    const r = parse(body);
    if (Math.abs(now() - r.timestamp) > EXACT_REFUND_MAX_SKEW_MS)
      throw new Refused(401, 'farebox_refund_stale', `timestamp is more than ${EXACT_REFUND_MAX_SKEW_MS / 60_000} minutes from the facilitator's clock`);
    const payment = await o.ledger.exactPayment(r.transaction);
    if (!payment) throw new Refused(404, 'farebox_refund_unknown_payment', REFUSED.unknown_payment[1]);
    // The owner recorded with the payment (whose earning it is) must have signed the request.
    const message = exactRefundMessage({ network: x402Network, service: r.service, transaction: r.transaction, timestamp: r.timestamp });
    let valid = false;
    try {
      valid = Keypair.fromPublicKey(payment.publisherOwner).verify(Buffer.from(message), r.signature);
    } catch {
      valid = false;
    }
    if (!valid) throw new Refused(403, 'farebox_refund_bad_signature', REFUSED.not_owner[1]);
    if (payment.service !== r.service) throw new Refused(409, 'farebox_refund_other_service', REFUSED.other_service[1]);
    if (!StrKey.isValidEd25519PublicKey(payment.payer))
      throw new Refused(409, 'farebox_refund_unsupported_payer', `the payer ${payment.payer} is not a G... account: refund it by hand`);
    const opened = await exactRefunds.open(db, {
      paymentTxHash: r.transaction,
      service: r.service,
      requestedBy: payment.publisherOwner,
      requestedAtMs: r.timestamp,
      windowMs,
    });
    if (!opened.opened) {
      const [status, text] = REFUSED[opened.refused];
      const extra = opened.refund
        ? { refund: { state: opened.refund.state, ...(opened.refund.refundTxHash ? { transaction: opened.refund.refundTxHash } : {}) } }
        : {};
      const window = windowMs % 60_000 === 0 ? `${windowMs / 60_000} minutes` : `${windowMs / 1000} s`;
      throw new Refused(status, `farebox_refund_${opened.refused}`, text.replace('<window>', window), extra);
    }
    crash('x402:refund-intent');
    const fields = { payment: r.transaction, payer: payment.payer, amount: payment.amount.toString(), network: x402Network };
    try {
      const done = await finish(r.transaction);
      return { status: 200, body: { refunded: true, transaction: done.refundTxHash, ...fields } };
    } catch (err) {
      o.log(`x402 refund of ${r.transaction} is recorded but not paid yet; the refund reconciler finishes it`, err);
      return {
        status: 202,
        body: {
          refunded: false,
          pending: true,
          ...fields,
          message: 'the refund is recorded (the earning reversed) and the transfer back is not confirmed yet: it is finished from the chain',
        },
      };
    }
  }

  async function pass(): Promise<{ refunded: number; pending: number }> {
    const at = now();
    const due = await exactRefunds.due(db, { olderThan: new Date(at - graceMs), now: new Date(at), leaseMs: 60_000 });
    const counts = { refunded: 0, pending: 0 };
    for (const refund of due) {
      try {
        const done = await finish(refund.paymentTxHash);
        if (done.state === 'refunded') counts.refunded++;
        else counts.pending++;
      } catch (err) {
        counts.pending++;
        o.log(`x402 refund of ${refund.paymentTxHash} (${refund.amount} to ${refund.payer}) is not finished yet; it is tried again`, err);
      }
    }
    return counts;
  }

  const guarded = () => {
    running ??= pass()
      .catch((err) => o.log('x402 refund reconciliation failed', err))
      .finally(() => (running = undefined));
    return running;
  };

  return {
    /** `POST /x402/refund`: the owner's signed request; the payment back to its payer, its earning reversed. */
    async request(body: unknown, ip: string): Promise<FacilitatorAnswer> {
      try {
        return await request(body, ip);
      } catch (err) {
        if (err instanceof Refused)
          return {
            status: err.status,
            body: { refunded: false, reason: err.reason, error: err.message, ...err.extra },
            ...(err.headers ? { headers: err.headers } : {}),
          };
        throw err;
      }
    },
    finish,
    /** One pass over the pending refunds older than the grace: each finished from the chain. */
    pass,
    start() {
      if (timer) return;
      void guarded();
      timer = setInterval(() => void guarded(), 60_000);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}

export type ExactRefunds = ReturnType<typeof createExactRefunds>;
