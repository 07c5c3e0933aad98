import { FareboxError } from '@farebox/protocol';

/** Every failure of @farebox/discovery carries one of these codes. */
export type DiscoveryErrorCode = 'INVALID_DOCUMENT' | 'INVALID_QUERY' | 'INVALID_OPTIONS' | 'DIMENSION_MISMATCH' | 'MODEL_UNAVAILABLE' | 'BAD_SNAPSHOT';

export class DiscoveryError extends FareboxError<DiscoveryErrorCode, Record<string, unknown> | undefined> {
  override readonly name: string = 'DiscoveryError';
  constructor(code: DiscoveryErrorCode, message: string, data?: Record<string, unknown>) {
    super(code, message, data);
  }
}
