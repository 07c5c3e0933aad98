import { formatAmount } from '@farebox/protocol';

/** The words of a call's failures: the service's own message, the refund, connection failures. */

export function messageOf(json: unknown): string {
  if (json && typeof json === 'object' && typeof (json as { error?: unknown }).error === 'string')
    return `: ${String((json as { error: string }).error).slice(0, 300)}`;
  return '';
}

export const formatUsd = (units: bigint) => formatAmount(units, { trim: true });

/** The suffix of a failed call's `error` once its hold is voided (nothing for a free service): docs/api.md, "Calls". */
export const refundedToCredits = (amount: bigint): string => (amount > 0n ? `; the ${formatUsd(amount)} USD charge was refunded to your credits` : '');

/** Connection failures in words, with the system's code: `connection refused (ECONNREFUSED)`. */
const NETWORK_REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  EPIPE: 'connection closed',
  UND_ERR_SOCKET: 'connection closed',
};
export function networkReason(code: string | undefined, message: string | undefined): string {
  if (code && NETWORK_REASONS[code]) return `${NETWORK_REASONS[code]} (${code})`;
  return code ?? message ?? 'connection failed';
}

/** The refusal of a call priced over what the caller allowed (`Farebox-Max-Cost`, the CLI's `--max-cost`): the price, the maximum, nothing charged. */
export const overMaxCost = (service: string, price: bigint, max: bigint): string =>
  `this call to ${service} costs $${formatUsd(price)}, over the most it may cost ($${formatUsd(max)}: Farebox-Max-Cost, --max-cost in the CLI); nothing was charged`;
