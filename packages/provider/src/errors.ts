import { FareboxError } from '@farebox/protocol';
/** Every code a {@link ProviderError} may carry. */
export type ProviderErrorCode =
  /** bootstrap() needs a registry client that can register, and the injected `registry` only reads. */
  | 'BOOTSTRAP_UNAVAILABLE'
  /** The owner account does not exist (or cannot pay its fees) and the network has no friendbot (mainnet). */
  | 'UNFUNDED'
  /** Funding or the USDC trustline failed on the settlement network. */
  | 'CHAIN'
  /** The service name is registered to another owner. */
  | 'NAME_TAKEN'
  /** The registry answered with something unusable, or could not be reached. */
  | 'REGISTRY'
  /** A keypair file could not be read or written. */
  | 'KEYPAIR'
  /** listen() or close() failed. */
  | 'SERVER'
  /** The served-escrow store could not be read or written (escrows are then refused, never served twice). */
  | 'ESCROW_STORE'
  /** An escrow operation (release) failed at the escrow provider. */
  | 'ESCROW'
  /** bootstrap({ account }) could not link the owner key to the publisher account (gateway unreachable, key refused, not a publisher). */
  | 'ACCOUNT';

/**
 * The one error class of `@farebox/provider`: a fixed string `code`, a human
 * message and structured `data`. Configuration problems are reported with
 * `ConfigError` from `@farebox/protocol` instead, all at once.
 *
 * @example
 * try { await provider.bootstrap(); } catch (e) {
 *   if (e instanceof ProviderError && e.code === 'BOOTSTRAP_UNAVAILABLE') console.error(e.message);
 * }
 */
export class ProviderError<Data = Record<string, unknown>> extends FareboxError<ProviderErrorCode, Data | undefined> {
  override readonly name: string = 'ProviderError';

  constructor(code: ProviderErrorCode, message: string, data?: Data) {
    super(code, message, data);
  }
}
