import { ESCROW_SCHEME, formatAmount, parsePaymentRequired, type ParsedQuote, type PaymentRequirements } from '@farebox/protocol';
import { readMuxedAddress, type NetworkConfig } from '@farebox/stellar';
import { z } from 'zod';
import { EscrowPaymentError } from './errors.js';
import type { PayTarget } from './payer.js';

const errorText = (e: unknown): string => (e instanceof Error && e.message ? e.message : String(e));

const QuoteExtraSchema = z.looseObject({
  quoteId: z.string().min(1).max(256),
  service: z.string().optional(),
  escrow: z.looseObject({ platformAddress: z.string().optional(), platformFee: z.number().optional() }).optional(),
});

/** A 402 quote the client accepts to pay. */
export interface Quote {
  requirement: PaymentRequirements;
  amount: bigint;
  quoteId: string;
  extra: z.infer<typeof QuoteExtraSchema>;
}

function usdc(units: bigint): string {
  return `${formatAmount(units, { trim: true })} USDC`;
}

/** Nothing in the quote can be paid from this client: said before any escrow exists. */
function noDirectPayment(net: NetworkConfig, quote: ParsedQuote, resolved: PayTarget): EscrowPaymentError {
  const name = resolved.service ?? resolved.endpoint;
  const listed = Array.isArray(quote.extra?.payments) ? quote.extra.payments.filter((p): p is string => typeof p === 'string') : undefined;
  const data = { ...(resolved.service ? { service: resolved.service } : {}), ...(listed ? { payments: listed } : {}) };
  if (quote.accepts.length === 0 && listed?.includes('platform')) {
    return new EscrowPaymentError('NO_DIRECT_PAYMENT', `${name} takes no direct payment: it is paid through the gateway only; nothing was paid`, data);
  }
  const offers = quote.accepts.map((a) => `${a.scheme} on ${a.network}`);
  const why = offers.length > 0 ? `it offers ${offers.join(', ')}` : quote.error || 'its quote offers no payment';
  return new EscrowPaymentError('NO_DIRECT_PAYMENT', `${name} offers no escrow payment on ${net.x402Network} (${why}); nothing was paid`, data);
}

/** The escrow offer of a 402 answer on this network, checked against the registry owner, the USDC asset and `maxCost`. */
export function pickQuote(
  net: NetworkConfig,
  answer: { headers: Headers; json: unknown },
  resolved: PayTarget,
  maxCost: bigint | undefined,
  declineExactTo?: string,
): Quote {
  let parsed;
  try {
    parsed = parsePaymentRequired({ headers: answer.headers, body: answer.json });
  } catch (e) {
    throw new EscrowPaymentError('QUOTE', `${resolved.endpoint} answered 402 without a readable x402 quote: ${errorText(e)}`);
  }
  // Paid into the treasury: its own address or its muxed address for the service (what Farebox offers name).
  const intoTreasury = (payTo: string) => payTo === declineExactTo || readMuxedAddress(payTo)?.account === declineExactTo;
  if (declineExactTo !== undefined && parsed.accepts.some((a) => a.scheme === 'exact' && a.network === net.x402Network && intoTreasury(a.payTo))) {
    const name = resolved.service ?? resolved.endpoint;
    throw new EscrowPaymentError('NO_DIRECT_PAYMENT', `${name} is paid into the platform treasury (x402 exact): no escrow is opened; nothing was paid`, {
      ...(resolved.service ? { service: resolved.service } : {}),
      payments: ['exact'],
    });
  }
  const requirement = parsed.accepts.find((a) => a.scheme === ESCROW_SCHEME && a.network === net.x402Network);
  if (!requirement) throw noDirectPayment(net, parsed, resolved);
  if (requirement.payTo !== resolved.owner) {
    throw new EscrowPaymentError(
      'PAYTO_MISMATCH',
      `the quote asks to pay ${requirement.payTo}, but the service's registry owner is ${resolved.owner}: nothing was paid`,
      {
        ...(resolved.service ? { service: resolved.service } : {}),
      },
    );
  }
  const asset = `USDC:${net.usdc.issuer}`;
  if (requirement.asset !== asset) throw new EscrowPaymentError('QUOTE', `the quote asks for ${requirement.asset}, not ${asset}`);
  if (requirement.amount <= 0n) throw new EscrowPaymentError('QUOTE', 'the quote amount is not positive');
  if (maxCost !== undefined && requirement.amount > maxCost) {
    throw new EscrowPaymentError('PRICE_LIMIT', `the service asks ${usdc(requirement.amount)}, above maxCost ${usdc(maxCost)}: nothing was paid`);
  }
  const extra = QuoteExtraSchema.safeParse(requirement.extra);
  if (!extra.success)
    throw new EscrowPaymentError('QUOTE', 'the quote carries no quoteId (extra.quoteId): refusing to pay an escrow that cannot be bound to it');
  return { requirement, amount: requirement.amount, quoteId: extra.data.quoteId, extra: extra.data };
}
