/** Every code a {@link CliError} may carry. */
export type CliErrorCode =
  /** Bad arguments or input (exit 2). */
  | 'USAGE'
  /** No credential stored or given (exit 1). */
  | 'NOT_SIGNED_IN'
  /** The gateway answered with an error (exit 1). */
  | 'GATEWAY'
  /** A local file or process problem (exit 1). */
  | 'LOCAL';

/** The one error class of `@farebox/cli`: a code, a message for stderr and the exit code. */
export class CliError extends Error {
  override name = 'CliError';
  readonly code: CliErrorCode;
  readonly exitCode: number;
  readonly data: Record<string, unknown>;

  constructor(code: CliErrorCode, message: string, data: Record<string, unknown> = {}) {
    super(message);
    this.code = code;
    this.exitCode = code === 'USAGE' ? 2 : 1;
    this.data = data;
  }
}
