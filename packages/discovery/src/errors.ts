/** Every failure of @farebox/discovery carries one of these codes. */
export type DiscoveryErrorCode =
  | 'INVALID_DOCUMENT'
  | 'INVALID_QUERY'
  | 'INVALID_OPTIONS'
  | 'DIMENSION_MISMATCH'
  | 'MODEL_UNAVAILABLE'
  | 'BAD_SNAPSHOT';

export class DiscoveryError extends Error {
  override readonly name = 'DiscoveryError';
  constructor(
    readonly code: DiscoveryErrorCode,
    message: string,
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
  }
}
