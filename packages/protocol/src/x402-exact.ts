// The standard x402 `exact` scheme on Stellar, as Farebox reads and writes it:
// the payment envelope (`PAYMENT-SIGNATURE`, or `X-PAYMENT` carrying the same
// v2 payload), and the check of what the payer accepted against what the
// service offers for this request, with the reference's error reasons.
import { z } from 'zod';
import { FareboxError } from './errors.js';
import { isValidStrKey } from './strkey.js';
import { decodeJsonHeader, ESCROW_SCHEME, EXACT_SCHEME, encodeJsonHeader } from './x402.js';

/** Networks `exact` is offered on (those `@x402/stellar` knows). */
export const EXACT_NETWORKS = ['stellar:testnet', 'stellar:pubnet'] as const;
export type ExactNetwork = (typeof EXACT_NETWORKS)[number];

/**
 * The reference's reasons for refusing an `exact` payment that does not match
 * the offer (`@x402/stellar`'s facilitator uses the same strings).
 */
export const EXACT_REASONS = {
  version: 'invalid_x402_version',
  scheme: 'unsupported_scheme',
  network: 'network_mismatch',
  malformed: 'invalid_exact_stellar_payload_malformed',
  asset: 'invalid_exact_stellar_payload_wrong_asset',
  payTo: 'invalid_exact_stellar_payload_wrong_recipient',
  amount: 'invalid_exact_stellar_payload_wrong_amount',
  resource: 'invalid_payment_requirements',
} as const;

/** An `exact` offer in its v2 form (what the payer echoes as `accepted`). */
export interface ExactRequirements {
  scheme: typeof EXACT_SCHEME;
  network: string;
  /** Base units, decimal string. */
  amount: string;
  /** The SEP-41 token contract, `C...`. */
  asset: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra: Record<string, unknown>;
}

/** A v2 `exact` payment payload, as carried by `PAYMENT-SIGNATURE`. */
export interface ExactPayment {
  x402Version: 2;
  resource?: { url: string; description?: string; mimeType?: string };
  accepted: ExactRequirements;
  /** The transaction (base64 XDR) with the payer's signed Soroban authorization entry. */
  payload: { transaction: string };
  extensions?: Record<string, unknown>;
}

const ExactPaymentSchema = z.object({
  x402Version: z.literal(2),
  resource: z.looseObject({ url: z.string(), description: z.string().optional(), mimeType: z.string().optional() }).optional(),
  accepted: z.looseObject({
    scheme: z.literal(EXACT_SCHEME),
    network: z.string(),
    amount: z.string().regex(/^\d{1,30}$/),
    asset: z.string(),
    payTo: z.string(),
    maxTimeoutSeconds: z.number().int().positive(),
    extra: z.record(z.string(), z.unknown()).optional().default({}),
  }),
  payload: z.looseObject({ transaction: z.string().min(1).max(16_384) }),
  extensions: z.record(z.string(), z.unknown()).optional(),
});

const SchemeOnlySchema = z.object({
  scheme: z.string().optional(),
  accepted: z.object({ scheme: z.string() }).optional(),
});

/**
 * The scheme a payment header names: `escrow` for a bare escrow id, else the
 * envelope's `scheme` (v1) or `accepted.scheme` (v2); undefined when unreadable.
 */
export function paymentHeaderScheme(value: string | undefined | null): string | undefined {
  if (typeof value !== 'string') return undefined;
  const text: string = value.trim();
  if (text.length > 32_768) return undefined;
  if (isValidStrKey('contract', value.trim())) return ESCROW_SCHEME;
  const parsed = SchemeOnlySchema.safeParse(decodeJsonHeader(text));
  if (!parsed.success) return undefined;
  return parsed.data.scheme ?? parsed.data.accepted?.scheme;
}

/** Parses a `PAYMENT-SIGNATURE` (or `X-PAYMENT`) value carrying a v2 `exact` payload. Throws `INVALID_PAYMENT` with the reason code. */
export function parseExactPaymentHeader(value: string): ExactPayment {
  const text = value.trim();
  if (text.length > 32_768) throw new FareboxError('INVALID_PAYMENT', `${EXACT_REASONS.malformed}: payment header too long`);
  const json = decodeJsonHeader(text);
  const version = (json as { x402Version?: unknown } | undefined)?.x402Version;
  if (json !== undefined && version !== 2) {
    throw new FareboxError(
      'INVALID_PAYMENT',
      `${EXACT_REASONS.version}: exact payments on Stellar are x402 version 2 (got ${JSON.stringify(version ?? null)})`,
    );
  }
  const parsed = ExactPaymentSchema.safeParse(json);
  if (!parsed.success) throw new FareboxError('INVALID_PAYMENT', `${EXACT_REASONS.malformed}: the payment header is not an x402 v2 exact payload`);
  return parsed.data as ExactPayment;
}

/** Encodes an `exact` payload for `PAYMENT-SIGNATURE`. */
export function encodeExactPaymentHeader(payment: ExactPayment): string {
  return encodeJsonHeader(payment);
}

/** Why an `exact` payment does not answer an offer: the reference's reason and a readable message. */
export interface ExactMismatch {
  reason: (typeof EXACT_REASONS)[keyof typeof EXACT_REASONS];
  message: string;
}

/**
 * Compares what the payer accepted with the offer this request gets (same
 * network, token, receiver, amount, service; and the payload must name this
 * resource: a payment whose resource was stripped is not taken, so it cannot
 * be redeemed at another service of the same price). Returns the first
 * mismatch, or undefined when they agree.
 */
export function matchExactPayment(payment: ExactPayment, offer: ExactRequirements, resource: string): ExactMismatch | undefined {
  const a = payment.accepted;
  if (a.scheme !== offer.scheme) return { reason: EXACT_REASONS.scheme, message: `the payment is for the ${a.scheme} scheme, this offer is ${offer.scheme}` };
  if (a.network !== offer.network) {
    return { reason: EXACT_REASONS.network, message: `the payment is for ${a.network}, this service takes exact payments on ${offer.network}` };
  }
  if (a.asset !== offer.asset) return { reason: EXACT_REASONS.asset, message: `the payment is in token ${a.asset}, this service is paid in ${offer.asset}` };
  if (a.payTo !== offer.payTo) return { reason: EXACT_REASONS.payTo, message: `the payment pays ${a.payTo}, this service is paid to ${offer.payTo}` };
  if (a.amount !== offer.amount) {
    return { reason: EXACT_REASONS.amount, message: `the payment is for ${a.amount} base units, this payload's price is ${offer.amount} base units` };
  }
  const service = offer.extra.service;
  if (service !== undefined && a.extra.service !== service) {
    return {
      reason: EXACT_REASONS.resource,
      message: `the payment is for the service ${JSON.stringify(a.extra.service ?? null)} (accepted.extra.service), this is ${JSON.stringify(service)}`,
    };
  }
  if (payment.resource === undefined) {
    return { reason: EXACT_REASONS.resource, message: `the payment names no resource: send the payload with resource.url ${resource}, as the 402 gave it` };
  }
  if (payment.resource.url !== resource) {
    return { reason: EXACT_REASONS.resource, message: `the payment is for the resource ${payment.resource.url}, not ${resource}` };
  }
  return undefined;
}
