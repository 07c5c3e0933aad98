// The refund of an x402 `exact` payment a Farebox service settled before its handler failed: the service owner's
// signed request to the platform's facilitator (`POST <gateway>/x402/refund`).

/** How far a refund request's timestamp may be from the facilitator's clock (ms). */
export const EXACT_REFUND_MAX_SKEW_MS = 5 * 60_000;

/** What a refund request names: the settlement transaction, the service, the network and when it was signed (epoch ms). */
export interface ExactRefundTerms {
  network: string;
  service: string;
  transaction: string;
  timestamp: number;
}

/**
 * The bytes the service owner signs (ed25519, its registry key) to ask for a refund: one line per field, in this
 * order, UTF-8. The signature is base64 of the 64-byte ed25519 signature over them.
 */
export function exactRefundMessage(t: ExactRefundTerms): Uint8Array {
  return new TextEncoder().encode(['farebox-x402-refund:v1', t.network, t.service, t.transaction.toLowerCase(), String(t.timestamp)].join('\n'));
}
