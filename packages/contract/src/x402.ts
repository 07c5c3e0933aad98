import { z } from 'zod';
import type { Auth, Operation } from './operation.js';

/**
 * The platform's x402 facilitator (docs/protocol.md, "The platform's x402
 * facilitator"): the x402 v2 facilitator wire format that `@x402/core`'s
 * `HTTPFacilitatorClient` speaks. The gateway answers these routes itself
 * (apps/gateway `x402-routes.ts`): refusals carry the x402 shape and `error`.
 */

const Json = z.record(z.string(), z.unknown());

export const X402Requirements = z
  .object({
    scheme: z.string(),
    network: z.string(),
    asset: z.string(),
    amount: z.string().meta({ description: 'Base units, a decimal string.' }),
    payTo: z.string(),
    maxTimeoutSeconds: z.number().int(),
    extra: Json.optional().meta({ description: 'Farebox offers carry `areFeesSponsored: true` and `service` (the service paid).' }),
  })
  .meta({ id: 'X402PaymentRequirements', description: 'x402 v2 PaymentRequirements (`exact` on Stellar).' });

export const X402FacilitatorRequest = z
  .object({
    x402Version: z.literal(2),
    paymentPayload: z
      .object({
        x402Version: z.literal(2),
        accepted: X402Requirements,
        payload: z.object({ transaction: z.string().meta({ description: 'The base64 XDR transaction envelope with the signed authorization entry.' }) }),
        resource: Json.optional(),
        extensions: Json.optional(),
      })
      .meta({ description: 'x402 v2 PaymentPayload.' }),
    paymentRequirements: X402Requirements,
  })
  .meta({ id: 'X402FacilitatorRequest', description: 'The body of verify and settle.' });

export const X402Supported = z
  .object({
    kinds: z.array(
      z.object({ x402Version: z.number().int(), scheme: z.string(), network: z.string(), extra: Json.optional() }).meta({
        description: "A kind's `extra`: `areFeesSponsored`, and `farebox` (Farebox's rules: `payTo`, `asset`, `catalog` and `rules`, one sentence each).",
      }),
    ),
    extensions: z.array(z.string()),
    signers: z.record(z.string(), z.array(z.string())),
    farebox: z
      .object({ payTo: z.string(), network: z.string(), asset: z.string() })
      .meta({ description: "Farebox's field: the treasury every Farebox `exact` offer pays, the network and the USDC contract." }),
  })
  .meta({ id: 'X402Supported', description: 'x402 SupportedResponse, plus `farebox`.' });

export const X402Verify = z
  .object({
    isValid: z.boolean(),
    invalidReason: z.string().optional(),
    invalidMessage: z.string().optional(),
    payer: z.string().optional(),
    error: z.string().optional().meta({ description: 'The message of a refusal.' }),
  })
  .meta({ id: 'X402Verify', description: 'x402 VerifyResponse.' });

export const X402Settle = z
  .object({
    success: z.boolean(),
    errorReason: z.string().optional(),
    errorMessage: z.string().optional(),
    payer: z.string().optional(),
    transaction: z.string().meta({ description: 'The settled transaction hash; empty when nothing was sent.' }),
    network: z.string(),
    error: z.string().optional().meta({ description: 'The message of a refusal.' }),
  })
  .meta({ id: 'X402Settle', description: 'x402 SettleResponse.' });

export const X402RefundRequest = z
  .object({
    transaction: z.string().meta({ description: 'The settlement transaction of the payment to refund (64 hex characters).' }),
    service: z.string().meta({ description: 'The service the payment paid.' }),
    timestamp: z.number().int().meta({ description: "When the request was signed, epoch milliseconds (within 5 minutes of the facilitator's clock)." }),
    signature: z.string().meta({
      description:
        "base64 ed25519 signature by the service owner's key (the payment's recorded owner) over the UTF-8 lines `farebox-x402-refund:v1`, the network (`stellar:testnet`), the service, the transaction (lower-case hex) and the timestamp, joined by `\\n` (`exactRefundMessage` of `@farebox/protocol`).",
    }),
  })
  .meta({ id: 'X402RefundRequest', description: 'The refund of an exact payment settled before its service failed, asked by its owner.' });

export const X402Refund = z
  .object({
    refunded: z.boolean(),
    pending: z.boolean().optional().meta({ description: 'The refund is recorded (the earning reversed); its transfer is finished from the chain (202).' }),
    transaction: z.string().optional().meta({ description: 'The refund transaction (treasury -> payer).' }),
    payment: z.string().optional().meta({ description: 'The settlement transaction refunded.' }),
    payer: z.string().optional(),
    amount: z.string().optional().meta({ description: 'Base units sent back: the amount paid, in full.' }),
    network: z.string().optional(),
    reason: z.string().optional().meta({ description: 'A refusal: `farebox_refund_*`, `invalid_payload`, `rate_limited`, `facilitator_unavailable`.' }),
    error: z.string().optional().meta({ description: 'The message of a refusal.' }),
    message: z.string().optional(),
    refund: z
      .object({ state: z.string(), transaction: z.string().optional() })
      .optional()
      .meta({ description: 'The existing refund (`farebox_refund_exists`).' }),
  })
  .meta({
    id: 'X402Refund',
    description:
      'The outcome of a refund request: 200 `refunded: true` with the refund transaction; 202 `pending: true`, recorded (the earning reversed) and the transfer back finished from the chain.',
  });

const NONE: Auth = { kind: 'none' };
const VERIFY_ERRORS = {
  400: 'a malformed body (`invalidReason: invalid_payload`)',
  422: "the requirements break Farebox's rules (payTo the treasury, the USDC contract, `extra.service` a catalog service, at least its price, `accepted` equal to the requirements): the reason and its explanation (`farebox_*`, `unsupported_scheme`, `invalid_network`, `invalid_payment_requirements`, ...)",
  429: "rate limit exceeded per IP or payer (`rate_limited`, `Retry-After`); a payer whose settle failed on chain today (`farebox_payer_settle_failed`), or with no settled payment once the newcomers' part of the day's sponsored fees is spent (`farebox_new_payer_bound_reached`; `Retry-After` until 00:00 UTC)",
  503: 'the facilitator is off on this gateway (`facilitator_unavailable`)',
} as const;
const SETTLE_ERRORS = {
  ...VERIFY_ERRORS,
  503: "the facilitator is off on this gateway (`facilitator_unavailable`), or no channel account came free within the payment's `maxTimeoutSeconds` (`farebox_facilitator_busy`) or none could be set up (`farebox_channels_unavailable`); nothing was sent (`Retry-After`)",
  429: "rate limit exceeded (`rate_limited`), or the payer's or the facilitator's daily bound on sponsored fees reached (`farebox_fee_bound_reached`, `farebox_daily_fee_bound_reached`), a payer whose settle failed on chain today (`farebox_payer_settle_failed`), or one with no settled payment once the newcomers' part is spent (`farebox_new_payer_bound_reached`; `Retry-After` until 00:00 UTC)",
} as const;
const op = <const O extends Operation>(o: O): O => o;

/** The facilitator's routes, for the operation table. */
// biome-ignore format: a table, one operation per line
export const facilitatorOperations = {
  x402Supported: op({ id: 'x402Supported', method: 'GET', path: '/x402/supported', tag: 'platform', summary: "The facilitator's payment kinds and signers, and the treasury Farebox offers pay (no credential)", auth: NONE, ipRateLimited: true, input: {}, status: 200, output: X402Supported, errors: { 429: 'rate limit exceeded (`Retry-After`)' } }),
  x402Verify: op({ id: 'x402Verify', method: 'POST', path: '/x402/verify', tag: 'platform', summary: 'Verifies an x402 exact payment; nothing moves (no credential)', auth: NONE, input: { body: X402FacilitatorRequest }, status: 200, output: X402Verify, errors: VERIFY_ERRORS, errorBody: X402Verify }),
  x402Refund: op({ id: 'x402Refund', method: 'POST', path: '/x402/refund', tag: 'platform', summary: "Refunds an exact payment settled before its service's handler failed: the amount back to the payer from the treasury, the earning reversed (signed by the service's owner; no credential)", auth: NONE, input: { body: X402RefundRequest }, status: 200, output: X402Refund, errors: { 400: 'a malformed body (`invalid_payload`)', 401: 'the timestamp is more than 5 minutes off (`farebox_refund_stale`)', 403: "not signed by the owner of the payment's service (`farebox_refund_bad_signature`)", 404: 'no exact payment with this transaction (`farebox_refund_unknown_payment`)', 409: 'another service\'s payment, refunded already, its earning in a settlement batch, or settled more than 10 minutes ago (`farebox_refund_other_service`, `_exists`, `_paid_out`, `_window_closed`), or a payer that is not a G... account', 429: 'rate limit exceeded per IP (`rate_limited`)', 503: 'the facilitator is off (`facilitator_unavailable`)' }, errorBody: X402Refund }),
  x402Settle: op({ id: 'x402Settle', method: 'POST', path: '/x402/settle', tag: 'platform', summary: "Settles an x402 exact payment into the treasury as the service's earning (no credential)", auth: NONE, input: { body: X402FacilitatorRequest }, status: 200, output: X402Settle, errors: SETTLE_ERRORS, errorBody: X402Settle }),
} as const;
