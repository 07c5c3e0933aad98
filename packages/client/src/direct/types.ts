import type { DirectCallResult as EscrowCallResult, Escrow, EscrowClient, ProgressEvent } from '@farebox/escrow';
import type { NetworkConfig, NetworkName, TxSigner } from '@farebox/stellar';
import type { AuthEntrySigner } from './exact.js';

/** The registry read the client needs (`createRegistryClient` from `@farebox/stellar` by default). */
export interface ServiceRegistry {
  getAgent(service: string): Promise<{ owner: string; endpoint: string; pricePerCall: bigint } | null>;
}

/** A service to call: its registry name, or an endpoint with the name or the owner to check the quote against. */
export type ServiceTarget = string | { service?: string; endpoint?: string; ownerWallet?: string };

export type { DirectCallStep, ProgressEvent, TraceStep } from '@farebox/escrow';

/** What a paid direct call returns, however it was paid. */
export interface DirectCallResult<T = unknown> extends Omit<EscrowCallResult<T>, 'escrowId' | 'quoteId'> {
  /** How it was paid: `exact` (one USDC transfer, settled by the service's facilitator) or `escrow`. */
  scheme: 'exact' | 'escrow';
  /** `escrow`: the escrow paid. */
  escrowId?: string;
  /** `escrow`: the quote it answered. */
  quoteId?: string;
  /** `exact`: the settlement transaction, read from the service's `PAYMENT-RESPONSE` (also in `releaseTx`). */
  transaction?: string;
  /** `exact`: who paid. */
  payer?: string;
}

export interface CallOptions {
  onProgress?: (event: ProgressEvent) => void;
  /** Refuse a quote above this many USDC (nothing is paid). */
  maxCost?: number | string;
  /** Present an escrow that is already funded (e.g. after the call step failed in transit) instead of opening a new one. */
  escrowId?: string;
  signal?: AbortSignal;
}

export interface ClientOptions {
  /** `testnet` (default), `mainnet`, `local` (the devnet), or a resolved `NetworkConfig` of `@farebox/stellar`. */
  network?: NetworkName | NetworkConfig;
  /** The devnet's base URL (network `local`). */
  devnetUrl?: string;
  rpcUrl?: string;
  /** Registry contract id. */
  contractId?: string;
  /**
   * The payer's key: a secret seed, or a signer (wallet, KMS). `exact` payments
   * need the seed, or a signer that also has `signAuthEntry(preimageXdr, { networkPassphrase })`
   * (as `contract.basicNodeSigner` gives); without one the client pays with `escrow`.
   */
  secret?: string;
  signer?: TxSigner & { signAuthEntry?: AuthEntrySigner['signAuthEntry'] };
  /** Pay with the standard x402 `exact` scheme when a service offers it on this network (default true); `escrow` otherwise. */
  exact?: boolean;
  /**
   * The escrow provider: an `EscrowClient` of `@farebox/escrow`, or its options.
   * `baseUrl` defaults to Trustless Work's (dev API on testnet), or `<devnet>/escrow` on `local`.
   */
  escrow?: EscrowClient | { apiKey: string; baseUrl?: string; budget?: { requests: number; windowMs: number }; maxRetries?: number };
  /** The platform treasury: escrows name it as platform address (5% fee) and dispute resolver. */
  platformAddress?: string;
  /** The gateway to ask for the treasury (`GET /v1/platform/key`) when `platformAddress` is not given. */
  gatewayUrl?: string;
  /** Registry access; default the chain's registry contract on this network. */
  registry?: ServiceRegistry;
  /** Check the service's `/manifest` against its registry record before paying. */
  verifyEndpoint?: boolean;
  /** Timeout of each request to a service, ms (default 120 000). */
  timeoutMs?: number;
  fetch?: typeof fetch;
  /** Environment for fallbacks (`TRUSTLESS_WORK_API_KEY`, `TRUSTLESS_WORK_PLATFORM_ADDRESS`, `FAREBOX_URL`); default `process.env`. */
  env?: Record<string, string | undefined>;
}

/** A dispute as the platform reports it. */
export interface DisputeResult {
  escrowId: string;
  state: 'open' | 'resolved';
  /** The on-chain dispute transaction (signed by the platform treasury), once made. */
  txHash?: string;
  explorerUrl?: string;
  resolution?: 'refund' | 'split';
  resolveTx?: string;
  resolveExplorerUrl?: string;
  /** Who got what at resolution, base units. */
  distributions?: Array<{ address: string; amount: bigint }>;
  /** Last problem the platform met (it retries). */
  error?: string;
}

export interface FareboxClient {
  readonly network: NetworkConfig;
  /** The payer's public key, when a key is configured. */
  readonly payer: string | undefined;
  /**
   * Pays a service directly. With `exact` offered on this network (and a key
   * that can sign Soroban authorization entries): one signed USDC transfer sent
   * in `PAYMENT-SIGNATURE`, settled by the service's facilitator before it
   * serves. Otherwise: quote, open and fund a single-release escrow naming the
   * service's registry owner, call the service with `X-PAYMENT`, and return its
   * result once served (and released by the service).
   */
  call<T = unknown>(target: ServiceTarget, payload: unknown, options?: CallOptions): Promise<DirectCallResult<T>>;
  /**
   * Asks the platform (the escrow's dispute resolver) to dispute an escrow this
   * client's key funded: a proof signed by the key goes to `POST /v1/disputes`
   * of `gatewayUrl`; the treasury disputes it on chain and resolves it (a full
   * refund by the automatic policy when the service never served, or an
   * operator's decision). Needs `gatewayUrl`.
   */
  dispute(escrowId: string, options?: { reason?: string }): Promise<DisputeResult>;
  /** The platform's record of a dispute (undefined when there is none). */
  getDispute(escrowId: string): Promise<DisputeResult | undefined>;
  /** Reads an escrow from the escrow provider. */
  getEscrow(escrowId: string): Promise<Escrow | undefined>;
  /** Compares a service's `/manifest` with its registry record; throws {@link EndpointVerificationError} on a mismatch. */
  verifyEndpoint(target: ServiceTarget): Promise<{ service: string; ownerWallet: string; endpoint: string }>;
}
