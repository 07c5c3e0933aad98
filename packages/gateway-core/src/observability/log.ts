import { pino, stdSerializers, type DestinationStream, type Logger, type LoggerOptions as PinoOptions } from 'pino';
import { isoTime } from './iso-time.js';

export type { Logger };

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface LoggerOptions {
  /** `FAREBOX_LOG_LEVEL`; default `info`. */
  level?: LogLevel;
  /** Where the JSON lines go (default stdout); the host passes a pretty printer when a terminal is attached. */
  destination?: DestinationStream;
  /** Fields on every line (default `{ service: 'farebox-gateway' }`). */
  base?: Record<string, unknown>;
  /**
   * Lines to stdout gathered up to this many bytes and written off the main
   * thread, one write for many lines (default 0: each line written at once,
   * synchronously). A line waits at most 100 ms; a process that ends itself
   * awaits {@link flushLogger} first (the exit hook writes what is gathered
   * but cannot wait for a write already on its way); a process killed with
   * SIGKILL loses what was not written yet.
   */
  bufferBytes?: number;
}

/** How long a buffered line may wait for its write. */
const FLUSH_MS = 100;

/**
 * Secrets never reach a log line: nothing logs headers or bodies, and fields
 * with these names are censored should an object carrying them be logged by
 * mistake, at the top of the line or nested up to three objects down
 * (`{ err: { config: { headers: { authorization } } } }`), in a line's fields
 * and in a child logger's bindings.
 */
const SECRET_FIELDS = new Set(['authorization', 'cookie', 'password', 'token', 'key', 'secret', 'csrf_token', 'access_token', 'refresh_token']);
const CENSOR_DEPTH = 4;
const CENSORED = '[redacted]';

/**
 * `value` with every secret field censored: the same object when it has
 * none, a copy of what leads to one otherwise (what the caller logged is left
 * as it was). This replaces pino's path redaction, whose wildcard paths
 * (`*.token`) ran every field of every line through a serializer of its own:
 * 26 µs a line against 9 µs without them (100,000 call lines, this machine);
 * this walk costs well under a microsecond for a flat line.
 */
function censorSecrets<T>(value: T, depth = CENSOR_DEPTH): T {
  // Arrays and byte arrays hold no named fields (a logged Buffer is not walked byte by byte).
  if (value === null || typeof value !== 'object' || Array.isArray(value) || ArrayBuffer.isView(value)) return value;
  let copy: Record<string, unknown> | undefined;
  const source = value as Record<string, unknown>;
  for (const field in source) {
    if (!Object.hasOwn(source, field)) continue;
    const inner = source[field];
    let next: unknown;
    if (SECRET_FIELDS.has(field)) next = CENSORED;
    else if (depth > 1 && inner !== null && typeof inner === 'object') next = censorSecrets(inner, depth - 1);
    else continue;
    if (next === inner) continue;
    // Same prototype and own properties (an Error keeps its message and stack for the err serializer).
    copy ??= Object.create(Object.getPrototypeOf(source), Object.getOwnPropertyDescriptors(source)) as Record<string, unknown>;
    copy[field] = next;
  }
  return (copy ?? value) as T;
}

/**
 * The gateway's structured logger (pino): one JSON object per line with
 * `time`, `level`, `msg` and the event's fields.
 *
 * @example
 * const log = createLogger({ level: 'info' });
 * log.info({ callId, service, outcome: 'ok' }, 'call');
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const config: PinoOptions = {
    level: options.level ?? 'info',
    base: options.base ?? { service: 'farebox-gateway' },
    serializers: { err: stdSerializers.err },
    // pino.stdTimeFunctions.isoTime's format, without a toISOString per line.
    timestamp: () => `,"time":"${isoTime(Date.now())}"`,
    formatters: { level: (label) => ({ level: label }), log: censorSecrets },
  };
  if (options.destination) return censoringChildren(pino(config, options.destination));
  if (!options.bufferBytes) return censoringChildren(pino(config));
  // Asynchronous pino destination: written at exit by pino's own exit hook. A write may take
  // everything gathered (sonic-boom's default cap is 16 KiB). The lines are gathered as bytes
  // (sonic-boom's buffer mode, each line encoded once): gathered as text, every line measured
  // the UTF-8 length of all the text gathered before it, half the buffer on average, 12 µs a
  // line with 64 KiB against 4 µs as bytes (a call line, pino included, this project's machines).
  const stdout = pino.destination({
    dest: 1,
    sync: false,
    minLength: options.bufferBytes,
    maxWrite: Math.max(16384, 2 * options.bufferBytes),
    contentMode: 'buffer',
  });
  const lines: DestinationStream & { flush(cb?: (err?: Error) => unknown): void; flushSync(): void } = {
    // sonic-boom types its write for text only; in buffer mode it takes bytes.
    write: (line: string) => void stdout.write(Buffer.from(line) as unknown as string),
    flush: (cb) => stdout.flush(cb),
    flushSync: () => stdout.flushSync(),
  };
  setInterval(() => {
    try {
      stdout.flush();
    } catch {
      // Destroyed at exit: nothing left to write.
    }
  }, FLUSH_MS).unref();
  return censoringChildren(pino(config, lines));
}

/**
 * Resolves once no block of lines is on its way any more, or after
 * `timeoutMs` (a reader that stopped reading does not hold the process).
 * With `bufferBytes`, a block may be on its way to the descriptor from
 * libuv's thread pool: `process.exit` does not wait for it, and pino's exit
 * hook writes only the lines still gathered (synchronously), so a process
 * that ends itself awaits this first.
 *
 * @example
 * await gateway.close();
 * await flushLogger(log);
 * process.exit(0);
 */
export function flushLogger(logger: Logger, timeoutMs = 2_000): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    try {
      // An error (a descriptor that cannot be fsync'ed, such as a pipe) still means the writes are done.
      logger.flush(done);
    } catch {
      done();
    }
  });
}

/** `logger` whose children (and theirs) censor their bindings, which pino writes without the log formatter. */
function censoringChildren(logger: Logger): Logger {
  const child = logger.child;
  logger.child = function (this: Logger, bindings, options) {
    return child.call(this, censorSecrets(bindings), options);
  } as Logger['child'];
  return logger;
}

/** The `(message, err)` sink older modules take, writing warnings (or errors) through `logger`. */
export function legacySink(logger: Logger, level: 'warn' | 'error' = 'warn') {
  return (message: string, err?: unknown): void => {
    if (err === undefined || err === '') logger[level](message);
    else logger[level]({ err }, message);
  };
}
