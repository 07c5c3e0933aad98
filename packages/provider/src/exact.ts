// The standard x402 `exact` payment of a provider: the offer put in every 402,
// and a payment's way to the handler: match the offer, verify with the
// facilitator and record it once (accept), then settle it (settle), after the
// handler answered or, with `settle: 'before-handler'`, before it runs.
import {
  EXACT_REASONS,
  EXACT_SCHEME,
  isValidStrKey,
  matchExactPayment,
  parseExactPaymentHeader,
  type ExactPayment,
  type ExactRequirements,
} from '@farebox/protocol';
import { servicePayTo } from '@farebox/stellar';
import { exactRefundMessage } from '@farebox/protocol';
import { Address, Keypair, type Operation, TransactionBuilder, xdr } from '@stellar/stellar-sdk';
import { HTTPFacilitatorClient, encodePaymentResponseHeader } from '@x402/core/http';
import type { PaymentPayload, PaymentRequirements, SettleResponse } from '@x402/core/types';
import type { ResolvedExact } from './exact-config.js';
import { FileServedEscrowStore, type ServedEscrowStore } from './served-store.js';

/** A payment refused, or whose settlement failed: the answer to give instead of the handler's. */
export interface ExactRefusal {
  ok: false;
  /** 402: answer with a fresh quote carrying `reason`/`message` (and `header`, a failed settlement's PAYMENT-RESPONSE); else a plain error. */
  status: 402 | 409 | 502 | 503;
  reason?: string;
  message: string;
  header?: string;
}

/** A payment verified by the facilitator and recorded once: nothing has moved yet. */
export interface ExactAccepted {
  ok: true;
  /** What it is recorded under in the served store. */
  key: string;
  amount: bigint;
  /** The payer's account, from its signed authorization. */
  payer: string;
  /** The ledger after which the payer's signed authorization can no longer be submitted. */
  expiresAfterLedger: number;
  payload: PaymentPayload;
  requirements: PaymentRequirements;
}

/** What became of the automatic refund of a payment settled before a handler that failed. */
export type ExactRefundOutcome = { refunded: true; transaction: string } | { refunded: false; pending: boolean; reason: string; message: string };

/** A settled payment: its transaction and the PAYMENT-RESPONSE header. */
export interface ExactSettled {
  ok: true;
  transaction: string;
  network: string;
  payer: string;
  header: string;
}

export interface ExactPayments {
  /** The `exact` offer for a price, or undefined while the receiver is unknown (the platform's facilitator did not answer). */
  offer(price: bigint): Promise<ExactRequirements | undefined>;
  /** Checks, verifies and records one payment of `price` for `resource`; nothing moves. */
  accept(header: string, price: bigint, resource: string): Promise<ExactAccepted | ExactRefusal>;
  /** Settles an accepted payment through the facilitator. */
  settle(accepted: ExactAccepted): Promise<ExactSettled | ExactRefusal>;
  /** Records that an accepted payment was never settled (the handler failed): it stays refused as a replay. */
  unused(key: string, reason: string): Promise<void>;
  /** Notes what became of a payment settled before a handler that failed. */
  handlerFailed(key: string, reason: string): Promise<void>;
  /**
   * Asks the platform's facilitator to send a payment settled before a handler that failed back to its payer
   * (`POST <facilitator>/refund`, signed by the owner's key); undefined when this provider cannot (another
   * facilitator, or no owner secret).
   */
  refund?(key: string, settled: ExactSettled): Promise<ExactRefundOutcome>;
}

const errorText = (e: unknown) => (e instanceof Error && e.message ? e.message : String(e));

/** `promise`, or an error once `ms` have passed (the facilitator client has no timeout of its own). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/**
 * What a payment is recorded under: its Soroban authorization (`exact:<payer>:<nonce>`,
 * what the chain spends once, so a payment rebuilt around the same signed
 * authorization is the same payment), the payer, the authorization's
 * expiration ledger and the payer's transaction hash. Undefined when the
 * transaction does not parse.
 */
export function exactPaymentKey(
  payment: ExactPayment,
  passphrase: string,
): { key: string; payer: string; expiresAfterLedger: number; txHash: string } | undefined {
  try {
    const tx = TransactionBuilder.fromXDR(payment.payload.transaction, passphrase);
    if (!('operations' in tx) || tx.operations.length !== 1 || tx.operations[0]!.type !== 'invokeHostFunction') return undefined;
    const op = tx.operations[0] as Operation.InvokeHostFunction;
    const entry = (op.auth ?? []).find((a) => a.credentials().switch() === xdr.SorobanCredentialsType.sorobanCredentialsAddress());
    if (!entry) return undefined;
    const creds = entry.credentials().address();
    const payer = Address.fromScAddress(creds.address()).toString();
    return {
      key: `exact:${payer}:${creds.nonce().toString()}`,
      payer,
      expiresAfterLedger: creds.signatureExpirationLedger(),
      txHash: tx.hash().toString('hex'),
    };
  } catch {
    return undefined;
  }
}

export function createExactPayments(options: {
  exact: ResolvedExact;
  service: string;
  network: string;
  /** The network passphrase the payer's transaction is read under. */
  passphrase: string;
  store?: ServedEscrowStore;
  now?: () => number;
  warn: (message: string) => void;
  /** The owner's secret (`S...`): signs the refund requests of a settle-first service (platform facilitator only). */
  ownerSecret?: string;
}): ExactPayments {
  const { exact, service, network } = options;
  const now = options.now ?? Date.now;
  const store = options.store ?? new FileServedEscrowStore(exact.servedStorePath);
  const facilitator = new HTTPFacilitatorClient({ url: exact.facilitatorUrl });
  let learned: { payTo?: string; until: number } | undefined;

  /** The platform's facilitator names the receiver (the treasury) at `GET /supported`, `farebox.payTo`: read once, retried after 10 s on failure. */
  async function payTo(): Promise<string | undefined> {
    if (exact.payTo) return exact.payTo;
    if (learned && (learned.payTo !== undefined || learned.until > now())) return learned.payTo;
    const url = `${exact.facilitatorUrl}/supported`;
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const body = (await res.json()) as { farebox?: { payTo?: unknown; network?: unknown; asset?: unknown } };
      const named = body?.farebox?.payTo;
      if (typeof named !== 'string' || !(isValidStrKey('publicKey', named) || isValidStrKey('contract', named))) {
        throw new Error('the answer names no farebox.payTo');
      }
      if (body.farebox?.network !== undefined && body.farebox.network !== network) {
        throw new Error(`the facilitator settles on ${String(body.farebox.network)}, this service runs on ${network}`);
      }
      if (body.farebox?.asset !== undefined && body.farebox.asset !== exact.asset) {
        throw new Error(`the facilitator takes token ${String(body.farebox.asset)}, this service is priced in ${exact.asset}`);
      }
      learned = { payTo: named, until: Number.POSITIVE_INFINITY };
    } catch (e) {
      learned = { until: now() + 10_000 };
      options.warn(`exact payments not offered yet: cannot learn payTo from the platform's facilitator ${url} (${errorText(e)})`);
    }
    return learned.payTo;
  }

  async function offer(price: bigint): Promise<ExactRequirements | undefined> {
    const receiver = await payTo();
    if (receiver === undefined) return undefined;
    // The platform's facilitator is paid at the treasury's muxed address for this service: what the payer signs names the service.
    const platformPayTo = exact.platform && isValidStrKey('publicKey', receiver) ? servicePayTo(receiver, service) : receiver;
    return {
      scheme: EXACT_SCHEME,
      network,
      amount: price.toString(),
      asset: exact.asset,
      payTo: platformPayTo,
      maxTimeoutSeconds: exact.maxTimeoutSeconds,
      // A settle-first service of the platform's facilitator says so in what the payer accepts: the facilitator then holds its
      // earning back from settlement batches for the refund window, so a handler failing after settlement is always refunded.
      extra: { areFeesSponsored: true, service, ...(exact.platform && exact.settle === 'before-handler' ? { refundable: true } : {}) },
    };
  }

  async function accept(header: string, price: bigint, resource: string): Promise<ExactAccepted | ExactRefusal> {
    let payment: ExactPayment;
    try {
      payment = parseExactPaymentHeader(header);
    } catch (e) {
      const [reason, ...rest] = errorText(e).split(': ');
      return { ok: false, status: 402, reason: reason ?? EXACT_REASONS.malformed, message: rest.join(': ') };
    }
    const offered = await offer(price);
    if (!offered) {
      return { ok: false, status: 503, message: `exact payments cannot be taken right now: the facilitator ${exact.facilitatorUrl} did not name the receiver` };
    }
    const mismatch = matchExactPayment(payment, offered, resource);
    if (mismatch) return { ok: false, status: 402, reason: mismatch.reason, message: mismatch.message };
    const id = exactPaymentKey(payment, options.passphrase);
    if (!id) {
      return { ok: false, status: 402, reason: EXACT_REASONS.malformed, message: 'the transaction is not one invokeHostFunction authorized by the payer' };
    }
    const { key } = id;
    const replay = {
      ok: false as const,
      status: 409 as const,
      message: `this payment was already presented to ${service} (replay): pay again with a new authorization`,
    };
    if (await store.get(key)) return replay;

    const requirements = offered as unknown as PaymentRequirements;
    const payload = payment as unknown as PaymentPayload;
    try {
      const verdict = await within(facilitator.verify(payload, requirements), 30_000, 'the verification');
      if (!verdict.isValid) {
        const reason = verdict.invalidReason ?? 'invalid_payload';
        return { ok: false, status: 402, reason, message: verdict.invalidMessage ?? `the facilitator refused the payment: ${reason}` };
      }
    } catch (e) {
      const { invalidReason: reason, invalidMessage } = e as { invalidReason?: string; invalidMessage?: string };
      if (reason) return { ok: false, status: 402, reason, message: invalidMessage ?? `the facilitator refused the payment: ${reason}` };
      return { ok: false, status: 502, message: `the facilitator ${exact.facilitatorUrl} could not verify the payment: ${errorText(e)}; nothing was paid` };
    }

    // Recorded before the handler runs and before settling: a second presentation is refused from now on, whatever comes of this one.
    const claimed = await store.claim({
      escrowId: key,
      service,
      quoteId: `exact:${id.txHash}`,
      amount: price.toString(),
      payer: id.payer,
      status: 'serving',
      claimedAt: now(),
      updatedAt: now(),
    });
    if (!claimed) return replay;
    return { ok: true, key, amount: price, payer: id.payer, expiresAfterLedger: id.expiresAfterLedger, payload, requirements };
  }

  async function settle(accepted: ExactAccepted): Promise<ExactSettled | ExactRefusal> {
    const { key, payload, requirements } = accepted;
    let settled: SettleResponse;
    try {
      // The facilitator waits for the transaction (up to maxTimeoutSeconds): allow that and half a minute more.
      settled = await within(facilitator.settle(payload, requirements), (exact.maxTimeoutSeconds + 30) * 1000, 'the settlement');
    } catch (e) {
      const failed = e as { errorReason?: string; errorMessage?: string; transaction?: string; payer?: string };
      if (!failed.errorReason) {
        await store.update(key, { status: 'abandoned', reason: `settlement unknown: ${errorText(e)}` }).catch(() => undefined);
        return {
          ok: false,
          status: 502,
          message: `the facilitator ${exact.facilitatorUrl} did not answer the settlement (${errorText(e)}); if it went through, the chain shows a transfer from your account: ask ${service}'s owner, this payment is recorded`,
        };
      }
      settled = {
        success: false,
        errorReason: failed.errorReason,
        // The facilitator's explanation travels on to the payer (not only its reason code).
        ...(failed.errorMessage ? { errorMessage: failed.errorMessage } : {}),
        transaction: failed.transaction ?? '',
        network: network as SettleResponse['network'],
        ...(failed.payer ? { payer: failed.payer } : {}),
      };
    }
    if (!settled.success) {
      const reason = settled.errorReason ?? 'settlement_failed';
      await store.update(key, { status: 'abandoned', reason }).catch(() => undefined);
      return {
        ok: false,
        status: 402,
        reason,
        message: settled.errorMessage ?? `the facilitator could not settle the payment: ${reason}`,
        header: encodePaymentResponseHeader(settled),
      };
    }
    const payer = settled.payer ?? accepted.payer;
    await store.update(key, { status: 'released', releaseTx: settled.transaction, payer }).catch((e: unknown) => {
      options.warn(`exact payment ${settled.transaction} settled but not marked in the served store: ${errorText(e)}`);
    });
    return {
      ok: true,
      transaction: settled.transaction,
      network: settled.network,
      payer,
      header: encodePaymentResponseHeader({ success: true, transaction: settled.transaction, network: settled.network, payer }),
    };
  }

  async function refund(key: string, settled: ExactSettled): Promise<ExactRefundOutcome> {
    const owner = Keypair.fromSecret(options.ownerSecret!);
    const timestamp = now();
    const terms = { network: settled.network, service, transaction: settled.transaction, timestamp };
    const signature = owner.sign(Buffer.from(exactRefundMessage(terms))).toString('base64');
    let outcome: ExactRefundOutcome;
    try {
      const res = await fetch(`${exact.facilitatorUrl}/refund`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ transaction: settled.transaction, service, timestamp, signature }),
        signal: AbortSignal.timeout(180_000),
      });
      const body = (await res.json().catch(() => ({}))) as {
        refunded?: boolean;
        transaction?: string;
        pending?: boolean;
        reason?: string;
        error?: string;
        message?: string;
      };
      outcome =
        res.status === 200 && body.refunded === true && typeof body.transaction === 'string'
          ? { refunded: true, transaction: body.transaction }
          : {
              refunded: false,
              pending: body.pending === true,
              reason: body.reason ?? `HTTP ${res.status}`,
              message: body.message ?? body.error ?? `the facilitator answered HTTP ${res.status}`,
            };
    } catch (e) {
      outcome = { refunded: false, pending: false, reason: 'facilitator_unreachable', message: `the facilitator did not answer the refund (${errorText(e)})` };
    }
    const note = outcome.refunded ? `refunded in ${outcome.transaction}` : `refund not done: ${outcome.reason}: ${outcome.message}`;
    await store.update(key, { status: 'released', reason: `the handler failed after settlement; ${note}` }).catch(() => undefined);
    return outcome;
  }

  return {
    offer,
    accept,
    settle,
    ...(options.ownerSecret && exact.platform ? { refund } : {}),
    async unused(key, reason) {
      await store.update(key, { status: 'abandoned', reason: `not settled, nothing charged: ${reason}` }).catch((e: unknown) => {
        options.warn(`exact payment ${key} not settled (${reason}), but not marked in the served store: ${errorText(e)}`);
      });
    },
    async handlerFailed(key, reason) {
      await store.update(key, { status: 'released', reason: `the handler failed after settlement: ${reason}` }).catch(() => undefined);
    },
  };
}
