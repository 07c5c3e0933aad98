/** Every code an {@link AdapterError} may carry (sign-in failures are `OAuthClientError`s of `@farebox/client/oauth`). */
export type AdapterErrorCode =
  /** A variable or option is invalid (listed together in the message). */
  'CONFIG';

/**
 * The configuration error of `@farebox/mcp`: a fixed string `code` and a
 * message meant for the person reading the MCP client's log.
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
