// MPP `charge` on Stellar (draft-stellar-charge-00): a service's 402 carries a
// `WWW-Authenticate: Payment ... method="stellar", intent="charge"` challenge
// beside its x402 offers, and a retry with `Authorization: Payment` pays it.
// Pull mode with fees sponsored: the credential's transaction is a SEP-41
// `transfer(payer, recipient, amount)` on an all-zero source whose auth entry
// the payer signed: exactly what an x402 `exact` payload on Stellar carries.
// So a charge takes the `exact` path unchanged (the platform's facilitator
// verifies it against the same offer, the handler runs, the facilitator
// settles it only after an answer) and its answer adds a Payment-Receipt.
// Push mode (a transaction the payer already submitted) is refused: it would
// charge before the service answered.
import { randomBytes } from 'node:crypto';
import {
  base64Encode,
  createPaymentChallenge,
  decodePaymentResponse,
  formatPaymentChallenge,
  formatPaymentReceipt,
  isOwnChallenge,
  MppError,
  parsePaymentCredential,
  PAYMENT_RECEIPT_HEADER,
  X402_HEADERS,
  type ExactRequirements,
} from '@farebox/protocol';
import { exactCall, type ExactCallDeps } from './exact-call.js';
import type { PaidRequest } from './provider.js';
import type { ProviderResponse } from './response.js';

/** How long a charge challenge may be answered. */
const CHALLENGE_TTL_MS = 5 * 60_000;

export interface MppCharges {
  /** The `WWW-Authenticate` value of a charge challenge for the `exact` offer (fees sponsored), or undefined without one. */
  challenge(offer: ExactRequirements | undefined, realm: string): Promise<string | undefined>;
  /**
   * The x402 `exact` payment (the PAYMENT-SIGNATURE value) a charge credential carries for `offer`; throws an
   * {@link MppError} for a credential this service did not issue, that expired, names another price, payee, token or
   * network, or pays in push mode.
   */
  toExact(authorization: string, offer: ExactRequirements | undefined, resource: string): Promise<string>;
  /** Adds the Payment-Receipt to a paid answer (the settlement's transaction is its reference). */
  receipt(response: ProviderResponse): ProviderResponse;
}

/** The provider's charges; `secret` binds its challenges (random per process unless given: one per deployment of replicas). */
export function createMppCharges(o: { secret?: string; now: () => number }): MppCharges {
  const secret = o.secret ?? randomBytes(32).toString('base64url');
  const requestOf = (offer: ExactRequirements) => ({
    amount: offer.amount,
    currency: offer.asset,
    recipient: offer.payTo,
    methodDetails: { network: offer.network, feePayer: true },
  });
  return {
    async challenge(offer, realm) {
      if (!offer) return undefined;
      const ch = await createPaymentChallenge(secret, {
        realm,
        method: 'stellar',
        intent: 'charge',
        request: requestOf(offer),
        // As long as the offer's authorization may last: the payer's auth entry expires by it (ledgers of 5 s, as the draft counts).
        expires: new Date(o.now() + Math.min(CHALLENGE_TTL_MS, offer.maxTimeoutSeconds * 1000)).toISOString(),
      });
      return formatPaymentChallenge(ch);
    },
    async toExact(authorization, offer, resource) {
      const credential = parsePaymentCredential(authorization);
      const ch = credential.challenge;
      if (ch.method !== 'stellar' || ch.intent !== 'charge')
        throw new MppError('method-unsupported', `this service takes stellar/charge, not ${ch.method}/${ch.intent}`);
      if (!offer) throw new MppError('method-unsupported', 'this service takes no charge right now (its facilitator did not name the receiver)');
      if (!(await isOwnChallenge(secret, ch))) throw new MppError('invalid-challenge', 'the challenge was not issued by this service');
      if (!ch.expires || !(Date.parse(ch.expires) > o.now())) throw new MppError('payment-expired', 'the challenge has expired: ask for a new one');
      const want = requestOf(offer);
      const r = ch.request as { amount?: unknown; currency?: unknown; recipient?: unknown; methodDetails?: { network?: unknown } };
      if (r.amount !== want.amount || r.currency !== want.currency || r.recipient !== want.recipient || r.methodDetails?.network !== want.methodDetails.network)
        throw new MppError(
          'invalid-challenge',
          `the challenge names another price, token, payee or network than this call's (${want.amount} base units to ${want.recipient})`,
        );
      const p = credential.payload as { type?: unknown; transaction?: unknown } | null;
      if (p?.type === 'hash' || p?.type === 'signedHash')
        throw new MppError(
          'verification-failed',
          'push mode is not taken: this service charges only for an answer, so the payment is settled after its handler answers (send type "transaction")',
        );
      if (p?.type !== 'transaction' || typeof p.transaction !== 'string' || p.transaction.length > 16_384)
        throw new MppError('invalid-payload', 'a charge credential carries {type: "transaction", transaction: <base64 XDR>}');
      const exact = { x402Version: 2, resource: { url: resource }, accepted: offer, payload: { transaction: p.transaction } };
      return base64Encode(new TextEncoder().encode(JSON.stringify(exact)));
    },
    receipt(response) {
      const settled = response.headers[X402_HEADERS.paymentResponseV2];
      if (response.status >= 300 || typeof settled !== 'string') return response;
      const { transaction } = decodePaymentResponse(settled);
      response.headers[PAYMENT_RECEIPT_HEADER.toLowerCase()] = formatPaymentReceipt({
        status: 'success',
        method: 'stellar',
        reference: String(transaction),
        timestamp: new Date(o.now()).toISOString(),
      });
      response.headers['cache-control'] = 'private';
      return response;
    },
  };
}

/**
 * A call paid with an MPP charge: the credential checked against this call's `exact` offer, then the `exact` path
 * (accepted, the handler, settled after an answer); a refused credential answers the 402 quote with a fresh
 * challenge, its problem in `mpp` (`type`, `detail`).
 */
export async function chargeCall(
  deps: ExactCallDeps,
  charges: MppCharges,
  authorization: string,
  payload: unknown,
  price: bigint,
  request: PaidRequest,
): Promise<ProviderResponse> {
  let exact: string;
  try {
    exact = await charges.toExact(authorization, await deps.exact?.offer(price), deps.resource);
  } catch (err) {
    if (!(err instanceof MppError)) throw err;
    const quote = await deps.quote(price, request.headers, err.message);
    quote.body = { ...(quote.body as Record<string, unknown>), mpp: err.problem() };
    return quote;
  }
  return charges.receipt(await exactCall(deps, exact, false, payload, price, request));
}
