// Farebox's rules on an `exact` payment, before the library or the network
// sees it: what the payer accepted must be what is being settled, and the
// rules themselves as `GET /x402/supported` states them.
import type { FacilitatorRequest } from './request.js';

/** The status of a refusal of Farebox's rules: not 200, so `@x402/core`'s HTTPFacilitatorClient throws a VerifyError whose message carries the reason and its explanation. */
export const RULE_STATUS = 422;

type Requirements = FacilitatorRequest['paymentRequirements'];

/** The reference's reason for a field of `accepted` that differs from the requirements (as `@x402/stellar`'s verify names them). */
const REASONS: Record<string, string> = {
  scheme: 'unsupported_scheme',
  network: 'network_mismatch',
  asset: 'invalid_exact_stellar_payload_wrong_asset',
  payTo: 'invalid_exact_stellar_payload_wrong_recipient',
  amount: 'invalid_exact_stellar_payload_wrong_amount',
};

/** JSON with its object keys sorted: equal values give equal text whatever order their keys came in. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * The first field in which what the payer accepted (`paymentPayload.accepted`)
 * differs from `paymentRequirements` (every field, `extra` and its `service`
 * included), as a reason and a message; undefined when they are the same. A
 * payment is settled only for the requirements it was made for.
 */
export function acceptedMismatch(accepted: Requirements, requirements: Requirements): { reason: string; message: string } | undefined {
  const fields = new Set([...Object.keys(requirements), ...Object.keys(accepted)]);
  const order = ['scheme', 'network', 'asset', 'payTo', 'amount', 'maxTimeoutSeconds', 'extra'];
  const sorted = [...order.filter((f) => fields.has(f)), ...[...fields].filter((f) => !order.includes(f)).sort()];
  for (const field of sorted) {
    const a = (accepted as Record<string, unknown>)[field];
    const r = (requirements as Record<string, unknown>)[field];
    if (canonical(a) === canonical(r)) continue;
    if (field === 'extra') {
      const ax = (a ?? {}) as Record<string, unknown>;
      const rx = (r ?? {}) as Record<string, unknown>;
      const key = [...new Set([...Object.keys(rx), ...Object.keys(ax)])].sort().find((k) => canonical(ax[k]) !== canonical(rx[k]));
      if (key !== undefined) {
        return {
          reason: 'invalid_payment_requirements',
          message: `paymentPayload.accepted.extra.${key} is ${canonical(ax[key])}, paymentRequirements.extra.${key} is ${canonical(rx[key])}: a payment is settled only for the requirements it was made for`,
        };
      }
    }
    return {
      reason: REASONS[field] ?? 'invalid_payment_requirements',
      message: `paymentPayload.accepted.${field} is ${canonical(a)}, paymentRequirements.${field} is ${canonical(r)}: a payment is settled only for the requirements it was made for`,
    };
  }
  return undefined;
}

/** Farebox's rules, as `GET /x402/supported` states them in each kind's `extra.farebox` (x402 v2 SupportedResponse). */
export function fareboxKindExtra(o: { payTo: string; asset: string }): Record<string, unknown> {
  return {
    treasury: o.payTo,
    payTo: 'the treasury muxed (M..., CAP-67) with the service\'s id: the first 8 bytes, big-endian, of SHA-256("farebox:service:" + extra.service)',
    asset: o.asset,
    catalog: '/x402/discovery/resources',
    rules: [
      `payTo must be the platform treasury ${o.payTo} muxed with the id of the service paid (M...): this facilitator settles payments to Farebox services only, and what the payer signs names the service`,
      `asset must be the USDC token contract ${o.asset}`,
      'extra.service must name a service of the Farebox catalog (GET /x402/discovery/resources)',
      "amount must be at least the service's price in the catalog (base units)",
      'paymentPayload.accepted must equal paymentRequirements, field by field',
    ],
  };
}
