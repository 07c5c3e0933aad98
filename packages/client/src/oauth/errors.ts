import { FareboxError } from '@farebox/protocol';
/** Every code an {@link OAuthClientError} may carry. */
export type OAuthClientErrorCode =
  /** A variable or option is invalid (listed together in the message). */
  | 'CONFIG'
  /** The browser sign-in did not complete (denied, timed out, state or issuer mismatch). */
  | 'SIGN_IN'
  /** Another process held the sign-in lock for too long. */
  | 'LOCK_TIMEOUT'
  /** The token file exists but cannot be read or written. */
  | 'TOKEN_FILE'
  /** The gateway could not be reached or answered something unusable. */
  | 'GATEWAY';

/**
 * The error of `@farebox/client/oauth`: a fixed string `code` and a message
 * meant for the person who started the sign-in.
 *
 * @example
 * try { await session.accessToken(); } catch (e) {
 *   if (e instanceof OAuthClientError && e.code === 'SIGN_IN') console.error(e.message);
 * }
 */
export class OAuthClientError extends FareboxError<OAuthClientErrorCode, undefined> {
  override readonly name: string = 'OAuthClientError';

  constructor(code: OAuthClientErrorCode, message: string) {
    super(code, message);
  }
}
