/** Every code the protocol package puts on a {@link FareboxError}. */
export type FareboxErrorCode =
  | 'INVALID_AMOUNT'
  | 'INVALID_KEY'
  | 'INVALID_CERTIFICATE'
  | 'INVALID_PAYMENT'
  | 'INVALID_INPUT'
  | 'CONFIG'
  | 'LOCK_HELD'
  | 'LOCK_TIMEOUT';

/** Where every error class and code is described (the `docs` link of an error points into it). */
export const ERRORS_DOC = 'docs/errors.md';

/**
 * The base of every Farebox error class, in every package: a fixed string
 * `code` (the class's own list), a human `message`, structured `data` for
 * programs, the `cause` when it wraps another error, and `docs`, where the
 * class and its codes are described. Each package's error class extends it
 * with its own codes (`LedgerError`, `StellarError`, `GatewayError`, ...), so
 * `err instanceof FareboxError` recognises any of them.
 *
 * @example
 * throw new FareboxError('INVALID_AMOUNT', 'more than 7 decimals', { input: '0.00000001' });
 */
export class FareboxError<Code extends string = FareboxErrorCode, Data = Record<string, unknown> | undefined> extends Error {
  override readonly name: string = 'FareboxError';
  readonly code: Code;
  readonly data: Data;

  constructor(code: Code, message: string, data?: Data, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.data = data as Data;
  }

  /** The section of `docs/errors.md` that describes this error class and its codes. */
  get docs(): string {
    return `${ERRORS_DOC}#${this.name.toLowerCase()}`;
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
export class ConfigError extends FareboxError<'CONFIG', { problems: string[] }> {
  override readonly name: string = 'ConfigError';
  readonly problems: string[];

  constructor(problems: string[]) {
    super('CONFIG', `invalid configuration: ${problems.join('; ')}`, { problems });
    this.problems = problems;
  }
}
