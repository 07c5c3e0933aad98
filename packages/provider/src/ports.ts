import type { EscrowPayment, PaymentResponse, X402Network } from '@farebox/protocol';

/** What the registry holds about one service (the subset the provider checks). */
export interface RegistryAgent {
  /** `G...` account that registered the service and receives its earnings. */
  owner: string;
  /** Registered floor price, base units. */
  pricePerCall: bigint;
  endpoint: string;
  description?: string;
}

/**
 * Read access to the registry contract. `createRegistryClient` from
 * `@farebox/stellar` (the default) satisfies it; a host can pass any object
 * with this shape, e.g. a cache in front of the chain.
 */
export interface RegistryReader {
  getAgent(service: string): Promise<RegistryAgent | null>;
}

/** The request an {@link EscrowVerifier} is asked to check. */
export interface EscrowClaimRequest {
  payment: EscrowPayment;
  service: string;
  /** The receiver the escrow must name: this service's owner. */
  payTo: string;
  /** The price of this payload, base units: the escrow must hold at least this much. */
  amount: bigint;
  network: X402Network;
}

/** A verifier's answer: a claimed escrow, or why it cannot be served. */
export type EscrowClaim =
  | { ok: true; escrowId: string; amount: bigint; payer: string }
  | {
      ok: false;
      /** 402 answers with a fresh quote (e.g. underfunded); 409 for an escrow already served. */
      status: 402 | 409;
      /** The spec's message where it has one, e.g. `escrow receiver does not match`. */
      message: string;
    };

/**
 * The direct (x402 escrow) payment path. `claim` must check that the escrow
 * is funded, pending, names `payTo` as receiver and covers `amount`, and mark
 * it as being served in durable storage so that it is served exactly once,
 * also across restarts. After the handler succeeded the provider calls
 * `release`; when the handler failed it calls `abandon` so the caller can be refunded.
 * The Trustless Work implementation comes with `@farebox/escrow`.
 */
export interface EscrowVerifier {
  /**
   * Optional: mints the quote id put in every quote, so that `claim` can tell
   * a payment answering a quote this provider issued (the escrow's
   * `engagementId`) from any other escrow. Without it quote ids are random.
   */
  quoteId?(quote: { service: string; payTo: string; amount: bigint; network: X402Network }): string;
  claim(request: EscrowClaimRequest): Promise<EscrowClaim>;
  release(claim: { escrowId: string; service: string }): Promise<PaymentResponse>;
  abandon(claim: { escrowId: string; service: string; reason: string }): Promise<void>;
}
