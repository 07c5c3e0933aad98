import { pino, stdSerializers, type DestinationStream, type Logger, type LoggerOptions as PinoOptions } from 'pino';

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
   * synchronously). A line waits at most 100 ms; everything is written at
   * exit; a process killed with SIGKILL loses what was not written yet.
   */
  bufferBytes?: number;
}

/** How long a buffered line may wait for its write. */
const FLUSH_MS = 100;

/**
 * Secrets never reach a log line: nothing logs headers or bodies, and these
 * paths are censored should an object carrying them be logged by mistake.
 */
const REDACT = [
  'authorization',
  'cookie',
  'password',
  'token',
  'key',
  'secret',
  'csrf_token',
  'access_token',
  'refresh_token',
  '*.authorization',
  '*.cookie',
  '*.password',
  '*.token',
  '*.secret',
  '*.key',
  'headers.authorization',
  'headers.cookie',
  'req.headers.authorization',
  'req.headers.cookie',
];

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
    redact: { paths: REDACT, censor: '[redacted]' },
    serializers: { err: stdSerializers.err },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
  if (options.destination) return pino(config, options.destination);
  if (!options.bufferBytes) return pino(config);
  // Asynchronous pino destination: written at exit by pino's own exit hook.
  const stdout = pino.destination({ dest: 1, sync: false, minLength: options.bufferBytes });
  setInterval(() => {
    try {
      stdout.flush();
    } catch {
      // Destroyed at exit: nothing left to write.
    }
  }, FLUSH_MS).unref();
  return pino(config, stdout);
}

/** The `(message, err)` sink older modules take, writing warnings (or errors) through `logger`. */
export function legacySink(logger: Logger, level: 'warn' | 'error' = 'warn') {
  return (message: string, err?: unknown): void => {
    if (err === undefined || err === '') logger[level](message);
    else logger[level]({ err }, message);
  };
}
