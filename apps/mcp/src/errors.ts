/** Every code an {@link AdapterError} may carry. */
export type AdapterErrorCode =
  /** A variable or option is invalid (listed together in the message). */
  | 'CONFIG'
  /** The browser sign-in did not complete (denied, timed out, state or issuer mismatch). */
  | 'SIGN_IN'
  /** Another adapter held the sign-in lock for too long. */
  | 'LOCK_TIMEOUT'
  /** The token file exists but cannot be read or written. */
  | 'TOKEN_FILE'
  /** The gateway could not be reached or answered something unusable. */
  | 'GATEWAY';

/**
 * The one error class of `@farebox/mcp`: a fixed string `code` and a message
 * meant for the person reading the MCP client's log.
 *
 * @example
 * try { loadAdapterConfig({ FAREBOX_URL: 'ftp://x' }); } catch (e) {
 *   if (e instanceof AdapterError && e.code === 'CONFIG') console.error(e.message);
 * }
 */
export class AdapterError extends Error {
  override name = 'AdapterError';
  readonly code: AdapterErrorCode;

  constructor(code: AdapterErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}
