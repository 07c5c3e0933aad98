import { z } from 'zod';
import { base64Decode, base64Encode, utf8 } from './encoding.js';
import { FareboxError } from './errors.js';
import { isValidStrKey } from './strkey.js';

/** Farebox's x402 scheme: the caller pays through a single-use escrow. */
export const ESCROW_SCHEME = 'escrow';
/** The standard x402 scheme: one signed SEP-41 `transfer`, settled by a facilitator (v2, `stellar:testnet` / `stellar:pubnet`). */
export const EXACT_SCHEME = 'exact';
/** CAIP-2 style network ids used in quotes. */
export const X402_NETWORKS = ['stellar:testnet', 'stellar:pubnet', 'stellar:local'] as const;
export type X402Network = (typeof X402_NETWORKS)[number];

/** Header names (HTTP headers are case-insensitive; these are the lower-case forms). */
export const X402_HEADERS = {
  /** v1 retry header: an x402 v1 envelope, or a bare escrow id. */
  payment: 'x-payment',
  /** v1 result header. */
  paymentResponse: 'x-payment-response',
  /** v2 quote header. */
  paymentRequired: 'payment-required',
  /** v2 retry header. */
  paymentSignature: 'payment-signature',
  /** v2 result header. */
  paymentResponseV2: 'payment-response',
} as const;

/** x402 v1 PaymentRequirements, as Farebox fills it. */
export interface PaymentRequirements {
  scheme: string;
  network: X402Network;
  /** Base units, as a decimal string. */
  maxAmountRequired: string;
  /** The asset, `USDC:<issuer>`. */
  asset: string;
  /** Receiver of the escrow: the service's registry owner. */
  payTo: string;
  resource: string;
  description: string;
  maxTimeoutSeconds: number;
  mimeType?: string;
  outputSchema?: unknown;
  extra?: Record<string, unknown>;
}

/** The 402 body (x402 v1). */
export interface PaymentRequiredBody {
  x402Version: 1;
  error: string;
  /** Empty when the service takes no direct payment (it is paid through the gateway only). */
  accepts: PaymentRequirements[];
  /** Farebox's quote data (service, price) when no escrow offer carries it. */
  extra?: Record<string, unknown>;
  /** A readable explanation of `error` (Farebox). */
  message?: string;
  /** x402 v2 extensions (e.g. `bazaar`), also in the v1 body. */
  extensions?: Record<string, unknown>;
}

export interface QuoteInput {
  /** Full URL of the paid resource. */
  resource: string;
  description: string;
  amount: bigint;
  payTo: string;
  network: X402Network;
  asset: string;
  maxTimeoutSeconds?: number;
  mimeType?: string;
  outputSchema?: unknown;
  /** Scheme-specific data: Farebox puts the service name, quote id, pricing note and the escrow parameters here. */
  extra?: Record<string, unknown>;
  /** The reason code of a refusal (`error` of both forms); default `payment required`. */
  error?: string;
  /** A readable explanation next to `error` (a Farebox field of both forms). */
  message?: string;
  /**
   * Whether the `escrow` scheme is offered (default true). False for a service
   * that takes no escrow payment right now: `extra` moves to the top level of
   * both forms, so the price stays readable (`accepts` is empty unless `exact` is offered).
   */
  escrow?: boolean;
  /** The standard `exact` offer (first in `accepts`): the token contract `C...`, its receiver, its timeout and `extra`. */
  exact?: { asset: string; payTo: string; maxTimeoutSeconds: number; extra: Record<string, unknown> };
  /** x402 v2 extensions (e.g. `bazaar`), in both forms. */
  extensions?: Record<string, unknown>;
}

/**
 * Builds the 402 answer: the x402 v1 body and the v2 `PAYMENT-REQUIRED`
 * header (base64 of the v2 object, standard alphabet with padding). Offers, in
 * order: `exact` (when given; v2 only, x402 v1 has no `exact` on Stellar), then
 * `escrow` (unless `escrow: false`).
 */
export function buildPaymentRequired(input: QuoteInput): { body: PaymentRequiredBody; headers: Record<string, string> } {
  if (input.amount <= 0n) throw new FareboxError('INVALID_PAYMENT', 'a quote amount must be positive');
  const mimeType = input.mimeType ?? 'application/json';
  const common = { resource: input.resource, description: input.description, mimeType };
  const offers: PaymentRequirements[] = [];
  if (input.exact) {
    offers.push({
      scheme: EXACT_SCHEME,
      network: input.network,
      maxAmountRequired: input.amount.toString(),
      asset: input.exact.asset,
      payTo: input.exact.payTo,
      ...common,
      maxTimeoutSeconds: input.exact.maxTimeoutSeconds,
      extra: input.exact.extra,
    });
  }
  if (input.escrow !== false) {
    offers.push({
      scheme: ESCROW_SCHEME,
      network: input.network,
      maxAmountRequired: input.amount.toString(),
      asset: input.asset,
      payTo: input.payTo,
      ...common,
      maxTimeoutSeconds: input.maxTimeoutSeconds ?? 300,
      ...(input.outputSchema !== undefined ? { outputSchema: input.outputSchema } : {}),
      ...(input.extra ? { extra: input.extra } : {}),
    });
  }
  const error = input.error ?? 'payment required';
  const more = {
    ...(input.escrow === false && input.extra ? { extra: input.extra } : {}),
    ...(input.message !== undefined ? { message: input.message } : {}),
    ...(input.extensions ? { extensions: input.extensions } : {}),
  };
  const v2 = {
    x402Version: 2,
    error,
    resource: { url: input.resource, description: input.description, mimeType },
    accepts: offers.map((o) => ({
      scheme: o.scheme,
      network: o.network,
      amount: o.maxAmountRequired,
      asset: o.asset,
      payTo: o.payTo,
      maxTimeoutSeconds: o.maxTimeoutSeconds,
      ...(o.extra ? { extra: o.extra } : {}),
    })),
    ...more,
  };
  // x402 v1 has no `exact` on Stellar (the scheme is v2's there): the v1 body offers only what a v1 client can pay.
  return {
    body: { x402Version: 1, error, accepts: offers.filter((o) => o.scheme !== EXACT_SCHEME), ...more },
    headers: { [X402_HEADERS.paymentRequired]: encodeJsonHeader(v2) },
  };
}

const NetworkSchema = z.enum(X402_NETWORKS);

// Offers on networks Farebox does not know (another chain) are skipped, not an error.
const isKnownNetwork = (network: string): network is X402Network => (X402_NETWORKS as readonly string[]).includes(network);

const RequirementV1Schema = z.object({
  scheme: z.string(),
  network: z.string(),
  maxAmountRequired: z.string().regex(/^\d+$/),
  asset: z.string(),
  payTo: z.string(),
  resource: z.string(),
  description: z.string(),
  maxTimeoutSeconds: z.number().int().positive(),
  mimeType: z.string().optional(),
  outputSchema: z.unknown().optional(),
  extra: z.record(z.string(), z.unknown()).optional(),
});

const PaymentRequiredV1Schema = z.object({
  x402Version: z.literal(1),
  error: z.string(),
  accepts: z.array(RequirementV1Schema),
  extra: z.record(z.string(), z.unknown()).optional(),
});

const PaymentRequiredV2Schema = z.object({
  x402Version: z.literal(2),
  error: z.string().optional().default(''),
  resource: z.object({ url: z.string(), description: z.string().optional().default(''), mimeType: z.string().optional() }),
  accepts: z.array(
    z.object({
      scheme: z.string(),
      network: z.string(),
      amount: z.string().regex(/^\d+$/),
      asset: z.string(),
      payTo: z.string(),
      maxTimeoutSeconds: z.number().int().positive(),
      extra: z.record(z.string(), z.unknown()).optional(),
    }),
  ),
  extra: z.record(z.string(), z.unknown()).optional(),
});

/** A quote as the caller sees it, whichever x402 version carried it. */
export interface ParsedQuote {
  version: 1 | 2;
  error: string;
  /** The offers; empty when the service takes no direct payment. */
  accepts: Array<PaymentRequirements & { amount: bigint }>;
  /** Farebox's top-level quote data, sent when no offer carries it (`service`, `priceBaseUnits`, `payments`). */
  extra?: Record<string, unknown>;
  /** The quoted price, base units: the first offer's amount, else the top-level `extra.priceBaseUnits`. */
  price?: bigint;
}

/** The price a quote names: its first offer, else Farebox's top-level `extra.priceBaseUnits`. */
function priceOf(accepts: ParsedQuote['accepts'], extra: Record<string, unknown> | undefined): { price?: bigint } {
  if (accepts[0]) return { price: accepts[0].amount };
  const units = extra?.priceBaseUnits;
  return typeof units === 'string' && /^\d{1,30}$/.test(units) && BigInt(units) > 0n ? { price: BigInt(units) } : {};
}

/**
 * Reads a 402 answer: the v2 `PAYMENT-REQUIRED` header first, then the v1 body
 * (as `@x402/fetch` does). Throws `INVALID_PAYMENT` when neither parses.
 */
export function parsePaymentRequired(input: { headers?: Record<string, string | undefined> | Headers; body?: unknown }): ParsedQuote {
  const header = readHeader(input.headers, X402_HEADERS.paymentRequired);
  if (header) {
    const parsed = PaymentRequiredV2Schema.safeParse(decodeJsonHeader(header));
    if (parsed.success) {
      const v2 = parsed.data;
      const accepts = v2.accepts.flatMap((a) => {
        const network = a.network;
        if (!isKnownNetwork(network)) return [];
        return [
          {
            scheme: a.scheme,
            network,
            maxAmountRequired: a.amount,
            amount: BigInt(a.amount),
            asset: a.asset,
            payTo: a.payTo,
            resource: v2.resource.url,
            description: v2.resource.description,
            maxTimeoutSeconds: a.maxTimeoutSeconds,
            ...(v2.resource.mimeType ? { mimeType: v2.resource.mimeType } : {}),
            ...(a.extra ? { extra: a.extra } : {}),
          },
        ];
      });
      return { version: 2, error: v2.error, accepts, ...(v2.extra ? { extra: v2.extra } : {}), ...priceOf(accepts, v2.extra) };
    }
  }
  const parsed = PaymentRequiredV1Schema.safeParse(input.body);
  if (!parsed.success) throw new FareboxError('INVALID_PAYMENT', 'not an x402 payment-required answer');
  const accepts = parsed.data.accepts.flatMap((a) => {
    const network = a.network;
    return isKnownNetwork(network) ? [{ ...a, network, amount: BigInt(a.maxAmountRequired) } as PaymentRequirements & { amount: bigint }] : [];
  });
  const extra = parsed.data.extra;
  return { version: 1, error: parsed.data.error, accepts, ...(extra ? { extra } : {}), ...priceOf(accepts, extra) };
}

/** What a caller presents to pay with an escrow. */
export interface EscrowPayment {
  /** 0 for a bare escrow id, else the x402 version of the envelope. */
  version: 0 | 1 | 2;
  scheme: typeof ESCROW_SCHEME;
  network?: X402Network;
  /** The escrow's contract id, `C...`. */
  escrowId: string;
  /** The quote this payment answers, when the caller echoed it. */
  quoteId?: string;
}

const EscrowPayloadSchema = z.object({
  escrowId: z.string().optional(),
  contractId: z.string().optional(),
  quoteId: z.string().max(256).optional(),
});

const EnvelopeSchema = z.object({
  x402Version: z.union([z.literal(1), z.literal(2)]),
  scheme: z.string().optional(),
  network: NetworkSchema.optional(),
  accepted: z.object({ scheme: z.string(), network: NetworkSchema.optional() }).optional(),
  payload: EscrowPayloadSchema,
});

/**
 * Parses an `X-PAYMENT` or `PAYMENT-SIGNATURE` header value: an x402 envelope
 * (base64 JSON, v1 or v2) whose scheme is `escrow`, or a bare escrow id
 * (`C...`). Throws `INVALID_PAYMENT` with the reason otherwise.
 */
export function parsePaymentHeader(value: string | undefined | null): EscrowPayment {
  if (typeof value !== 'string' || value.trim() === '') throw new FareboxError('INVALID_PAYMENT', 'payment header is empty');
  const text = value.trim();
  if (text.length > 8192) throw new FareboxError('INVALID_PAYMENT', 'payment header too long');
  if (isValidStrKey('contract', text)) return { version: 0, scheme: ESCROW_SCHEME, escrowId: text };
  const json = decodeJsonHeader(text);
  const parsed = EnvelopeSchema.safeParse(json);
  if (!parsed.success) throw new FareboxError('INVALID_PAYMENT', 'payment header is neither an escrow id nor an x402 envelope');
  const env = parsed.data;
  const scheme = env.scheme ?? env.accepted?.scheme;
  if (scheme !== ESCROW_SCHEME) throw new FareboxError('INVALID_PAYMENT', `unsupported payment scheme ${JSON.stringify(scheme ?? null)} (expected "escrow")`);
  const escrowId = env.payload.escrowId ?? env.payload.contractId;
  if (!isValidStrKey('contract', escrowId)) throw new FareboxError('INVALID_PAYMENT', 'payment payload has no valid escrow id (C...)');
  const network = env.network ?? env.accepted?.network;
  return {
    version: env.x402Version,
    scheme: ESCROW_SCHEME,
    escrowId,
    ...(network ? { network } : {}),
    ...(env.payload.quoteId ? { quoteId: env.payload.quoteId } : {}),
  };
}

/** Encodes an escrow payment as an x402 envelope for `X-PAYMENT` (v1) or `PAYMENT-SIGNATURE` (v2). */
export function encodePaymentHeader(payment: { escrowId: string; network: X402Network; quoteId?: string }, version: 1 | 2 = 1): string {
  const payload = { escrowId: payment.escrowId, ...(payment.quoteId ? { quoteId: payment.quoteId } : {}) };
  const envelope =
    version === 1
      ? { x402Version: 1, scheme: ESCROW_SCHEME, network: payment.network, payload }
      : { x402Version: 2, accepted: { scheme: ESCROW_SCHEME, network: payment.network }, payload };
  return encodeJsonHeader(envelope);
}

export interface PaymentResponse {
  success: boolean;
  /** On-chain transaction hash (the release), or the escrow id when none was produced. */
  transaction: string;
  network: X402Network;
  payer: string;
}

const PaymentResponseSchema = z.object({ success: z.boolean(), transaction: z.string(), network: NetworkSchema, payer: z.string() });

/** Encodes the `X-PAYMENT-RESPONSE` / `PAYMENT-RESPONSE` value. */
export function encodePaymentResponse(response: PaymentResponse): string {
  return encodeJsonHeader(response);
}

export function decodePaymentResponse(value: string): PaymentResponse {
  const parsed = PaymentResponseSchema.safeParse(decodeJsonHeader(value));
  if (!parsed.success) throw new FareboxError('INVALID_PAYMENT', 'invalid payment response header');
  return parsed.data;
}

/** Base64 (standard, padded) of the UTF-8 JSON of `value`: every x402 header's encoding. */
export function encodeJsonHeader(value: unknown): string {
  return base64Encode(utf8.encode(JSON.stringify(value)));
}

/** The JSON value of an x402 header; undefined when it is not base64 JSON. */
export function decodeJsonHeader(value: string): unknown {
  const bytes = base64Decode(value.trim());
  if (!bytes) return undefined;
  try {
    return JSON.parse(utf8.decode(bytes));
  } catch {
    return undefined;
  }
}

function readHeader(headers: Record<string, string | undefined> | Headers | undefined, name: string): string | undefined {
  if (!headers) return undefined;
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const rec = headers as Record<string, string | undefined>;
  for (const key of Object.keys(rec)) if (key.toLowerCase() === name) return rec[key];
  return undefined;
}
