import type { DestinationStream } from 'pino';

export interface PrettyLinesOptions {
  /** Where each formatted line goes (default: stdout). */
  write?: (text: string) => void;
  /** ANSI colours for the level and the status (a terminal); default false. */
  colors?: boolean;
}

const LEVELS: Record<string, { label: string; color: string }> = {
  trace: { label: 'TRACE', color: '90' },
  debug: { label: 'DEBUG', color: '90' },
  info: { label: 'INFO ', color: '32' },
  warn: { label: 'WARN ', color: '33' },
  error: { label: 'ERROR', color: '31' },
  fatal: { label: 'FATAL', color: '35' },
};

/** Fields every line has, or that a request line shows in its own words. */
const SHOWN = new Set(['level', 'time', 'msg', 'service', 'pid', 'hostname', 'err']);
const REQUEST_SHOWN = new Set([...SHOWN, 'event', 'reqId', 'method', 'route', 'status', 'ms', 'ip', 'principal', 'accountId', 'clientId']);

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** `HH:MM:SS.mmm` of the line's ISO time, in local time. */
function clock(time: unknown): string {
  const d = typeof time === 'string' || typeof time === 'number' ? new Date(time) : new Date(Number.NaN);
  if (Number.isNaN(d.getTime())) return '--:--:--.---';
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

/** `key=value` for a field: plain text as is when it has no space, anything else as JSON. */
function field(key: string, value: unknown): string {
  const text = typeof value === 'string' && /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return `${key}=${text}`;
}

/**
 * One log line (a JSON object as `createLogger` writes it) as one readable
 * line: time, level, message and the other fields as `key=value`. A request
 * line reads `GET /v1/agents 200 1.2 ms api_key acct_… req=6aa8f442`; an
 * error's stack follows on its own lines. A line that is not JSON is kept as is.
 *
 * @example
 * formatLogLine('{"level":"info","time":"2026-01-01T10:00:00.000Z","event":"request","method":"GET","route":"/health","status":200,"ms":0.5,"reqId":"6aa8f442-…","msg":"request"}');
 * // '11:00:00.000 INFO  GET /health 200 0.5 ms req=6aa8f442'
 */
export function formatLogLine(line: string, colors = false): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line.replace(/\n$/, '');
  }
  if (o === null || typeof o !== 'object') return line.replace(/\n$/, '');
  const paint = (code: string, text: string) => (colors ? `\u001b[${code}m${text}\u001b[0m` : text);
  const level = LEVELS[String(o.level)] ?? { label: String(o.level).toUpperCase().padEnd(5), color: '0' };
  const parts = [paint('90', clock(o.time)), paint(level.color, level.label)];
  const isRequest = o.event === 'request';
  if (isRequest) {
    const status = Number(o.status);
    const statusColor = status >= 500 ? '31' : status >= 400 ? '33' : '32';
    parts.push(`${o.method} ${o.route}`, paint(statusColor, String(o.status)), `${o.ms} ms`);
    if (o.principal) parts.push(`${o.principal}${o.accountId ? ` ${o.accountId}` : ''}${o.clientId ? ` ${o.clientId}` : ''}`);
  } else if (o.msg !== undefined) {
    parts.push(String(o.msg));
  }
  const shown = isRequest ? REQUEST_SHOWN : SHOWN;
  for (const [key, value] of Object.entries(o)) if (!shown.has(key) && value !== undefined) parts.push(field(key, value));
  if (isRequest && typeof o.reqId === 'string') parts.push(paint('90', `req=${o.reqId.slice(0, 8)}`));
  let text = parts.join(' ');
  const err = o.err as { type?: string; message?: string; stack?: string } | undefined;
  if (err && typeof err === 'object') {
    const stack = typeof err.stack === 'string' ? err.stack : `${err.type ?? 'Error'}: ${err.message ?? ''}`;
    text += `\n${stack
      .split('\n')
      .map((l) => `    ${l}`)
      .join('\n')}`;
  }
  return text;
}

/**
 * A pino destination that writes every line readable ({@link formatLogLine})
 * and synchronously: what a person reads on a terminal, and what the local
 * stack (`npm start`) shows. JSON lines stay the default everywhere else.
 *
 * @example
 * const log = createLogger({ destination: prettyLines({ colors: process.stdout.isTTY }) });
 */
export function prettyLines(options: PrettyLinesOptions = {}): DestinationStream {
  const write = options.write ?? ((text: string) => void process.stdout.write(text));
  const colors = options.colors ?? false;
  return {
    write(chunk: string) {
      for (const line of chunk.split('\n')) if (line) write(`${formatLogLine(line, colors)}\n`);
    },
  };
}
