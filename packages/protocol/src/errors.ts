/** Every code a Farebox package may put on a {@link FareboxError}. */
export type FareboxErrorCode =
  | 'INVALID_AMOUNT'
  | 'INVALID_KEY'
  | 'INVALID_CERTIFICATE'
  | 'INVALID_PAYMENT'
  | 'INVALID_INPUT'
  | 'CONFIG';

/**
 * The one error class of the protocol package: a fixed string `code`, a human
 * message, and structured `data` for programs.
 *
 * @example
 * throw new FareboxError('INVALID_AMOUNT', 'more than 7 decimals', { input: '0.00000001' });
 */
export class FareboxError<Data = Record<string, unknown>> extends Error {
  override readonly name: string = 'FareboxError';
  readonly code: FareboxErrorCode;
  readonly data: Data | undefined;

  constructor(code: FareboxErrorCode, message: string, data?: Data) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

/**
 * Configuration problems, reported all at once: `problems` lists each one and
 * the message joins them.
 *
 * @example
 * const problems = validate(options);
 * if (problems.length) throw new ConfigError(problems);
 */
export class ConfigError extends FareboxError<{ problems: string[] }> {
  override readonly name = 'ConfigError';
  readonly problems: string[];

  constructor(problems: string[]) {
    super('CONFIG', `invalid configuration: ${problems.join('; ')}`, { problems });
    this.problems = problems;
  }
}
