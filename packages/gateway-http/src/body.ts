import { isUtf8 } from 'node:buffer';
import type { Transform } from 'node:stream';
import * as zlib from 'node:zlib';
import { unsafeTextIn } from '@farebox/protocol';
import type { HttpRequest } from './http.js';

/** The deepest JSON body any route accepts: deeper nesting is refused before parsing (no handler ever walks it). */
export const MAX_JSON_DEPTH = 64;
export const JSON_TOO_DEEP = `JSON nested too deeply (max depth ${MAX_JSON_DEPTH})`;
export const MALFORMED_URL = 'malformed percent-encoding in the URL';
export const INVALID_JSON = 'invalid JSON body';
export const BODY_TOO_LARGE = 'request body too large';
/** The JSON body limit of the API's routes (`/v1`, `/mcp`): 1 MiB. */
export const API_BODY_LIMIT = 1024 * 1024;

const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** True when the JSON text nests objects and arrays deeper than `max` (one pass over the bytes, strings skipped). */
export function jsonTooDeep(buf: Uint8Array, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i]!;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > max) return true;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
  }
  return false;
}

export const JSON_NOT_UTF8 = 'JSON bodies must be UTF-8';
/** Bytes that are no UTF-8 (an encoded surrogate, a cut sequence): refused, not read as U+FFFD. */
export const JSON_BAD_UTF8 = 'invalid UTF-8 in the JSON body';
export const UNSUPPORTED_ENCODING = 'unsupported body encoding';

/**
 * A body the reader refused: its status and message, and the `type` that
 * names the refusal (`inputError` reads it).
 */
export class BodyError extends Error {
  readonly expose = true;
  constructor(
    readonly status: number,
    message: string,
    readonly type: string,
  ) {
    super(message);
  }
}

/** type-is's rule: a request has a body when it says how long it is or that it is chunked. */
export function hasBody(req: Pick<HttpRequest, 'headers'>): boolean {
  return req.headers['transfer-encoding'] !== undefined || !Number.isNaN(Number(req.headers['content-length'] ?? NaN));
}

const PLAIN_JSON = { type: 'application/json', charset: undefined } as const;

/** The media type (lower case) and `charset` parameter (lower case, unquoted) of a Content-Type header. */
function mediaTypeOf(header: string | string[] | undefined): { type: string; charset: string | undefined } | undefined {
  if (typeof header !== 'string') return undefined;
  if (header === 'application/json') return PLAIN_JSON;
  const semi = header.indexOf(';');
  const type = (semi === -1 ? header : header.slice(0, semi)).trim().toLowerCase();
  let charset: string | undefined;
  if (semi !== -1) {
    for (const param of header.slice(semi + 1).split(';')) {
      const eq = param.indexOf('=');
      if (eq !== -1 && param.slice(0, eq).trim().toLowerCase() === 'charset')
        charset = param
          .slice(eq + 1)
          .trim()
          .replace(/^"(.*)"$/, '$1')
          .toLowerCase();
    }
  }
  return { type, charset };
}

/** True for `Content-Type: application/json` (any parameters): the bodies {@link readJsonBody} reads. */
export function isJsonBody(req: Pick<HttpRequest, 'headers'>): boolean {
  return mediaTypeOf(req.headers['content-type'])?.type === 'application/json';
}

/** True for `Content-Type: application/x-www-form-urlencoded` (any parameters): the bodies {@link readFormBody} reads. */
export function isFormBody(req: Pick<HttpRequest, 'headers'>): boolean {
  return mediaTypeOf(req.headers['content-type'])?.type === 'application/x-www-form-urlencoded';
}

const zstd = (zlib as { createZstdDecompress?: () => Transform }).createZstdDecompress;
/** The decompressors of the Content-Encodings a body may come in. */
const DECOMPRESSORS: Record<string, (() => Transform) | undefined> = {
  gzip: zlib.createGunzip,
  deflate: zlib.createInflate,
  br: zlib.createBrotliDecompress,
  ...(zstd ? { zstd } : {}),
};

const EMPTY = Buffer.alloc(0);

/** The body's chunks, one at a time (a whole body is one chunk). */
function chunksOf(body: HttpRequest['body']): AsyncIterator<Uint8Array> | undefined {
  if (body === undefined) return undefined;
  if (body instanceof Uint8Array) {
    let sent = false;
    return {
      async next() {
        if (sent) return { done: true, value: undefined };
        sent = true;
        return { done: false, value: body };
      },
    };
  }
  return body[Symbol.asyncIterator]();
}

/**
 * Reads the rest of a body off without keeping it: a refused body is
 * answered once the client has sent it (the connection stays usable).
 */
async function drain(it: AsyncIterator<Uint8Array>): Promise<void> {
  try {
    for (;;) if ((await it.next()).done) return;
  } catch {
    // the client went away: nothing left to read
  }
}

/** Reads the request's body off, then throws a {@link BodyError}. */
export async function refuseBody(req: HttpRequest, status: number, message: string, type: string): Promise<never> {
  const it = chunksOf(req.body);
  req.body = undefined;
  if (it) await drain(it);
  throw new BodyError(status, message, type);
}

/**
 * A body's bytes: Content-Encoding undone (gzip, deflate, br, and zstd where
 * Node has it; another is a 415), at most `limit` bytes counted after
 * decoding (said in Content-Length or counted: a 413 once the rest is read
 * off). The body is read once: `req.body` is gone afterwards.
 */
export async function readBodyBytes(req: HttpRequest, limit: number): Promise<Buffer> {
  const coding = (typeof req.headers['content-encoding'] === 'string' ? req.headers['content-encoding'] : 'identity').toLowerCase();
  const identity = coding === 'identity';
  const decompressor = identity ? undefined : Object.hasOwn(DECOMPRESSORS, coding) ? DECOMPRESSORS[coding] : undefined;
  if (!identity && !decompressor) return refuseBody(req, 415, UNSUPPORTED_ENCODING, 'encoding.unsupported');
  const declared = req.headers['content-length'];
  if (identity && typeof declared === 'string' && Number(declared) > limit) return refuseBody(req, 413, BODY_TOO_LARGE, 'entity.too.large');
  const it = chunksOf(req.body);
  req.body = undefined;
  if (!it) return EMPTY;
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  let invalid = false;
  const keep = (chunk: Uint8Array) => {
    if (over) return;
    size += chunk.length;
    if (size > limit) {
      over = true;
      chunks.length = 0;
      return;
    }
    chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  };
  const dec = decompressor?.();
  if (dec) {
    dec.on('data', (c: Buffer) => {
      keep(c);
      if (over) dec.destroy();
    });
    dec.on('error', () => {
      invalid = true;
    });
  }
  for (;;) {
    let r: IteratorResult<Uint8Array>;
    try {
      r = await it.next();
    } catch {
      throw new BodyError(400, 'request aborted', 'request.aborted');
    }
    if (r.done) break;
    if (over || invalid) continue;
    if (!dec) keep(r.value);
    else if (!dec.write(r.value)) await new Promise<void>((resolve) => dec.once('drain', resolve).once('close', resolve));
  }
  if (dec && !over && !invalid) {
    await new Promise<void>((resolve) => {
      dec.once('end', resolve).once('close', resolve);
      dec.end();
    });
  }
  if (over) throw new BodyError(413, BODY_TOO_LARGE, 'entity.too.large');
  if (invalid) throw new BodyError(400, `invalid ${coding} body`, 'encoding.invalid');
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
}

export interface JsonBodyOptions {
  /** The most bytes taken, counted after any Content-Encoding is undone. */
  limit: number;
  /** Only an object or an array at the top (default true). */
  strict?: boolean;
}

/**
 * The one JSON body reader of the gateway. The rules, in order: a `charset`
 * other than UTF-8 is a 415 (JSON is UTF-8, RFC 8259 8.1); then
 * {@link readBodyBytes} (encodings, the limit); then {@link parseJsonBytes}.
 * Resolves the value, rejects with a {@link BodyError}.
 */
export async function readJsonBody(req: HttpRequest, options: JsonBodyOptions): Promise<unknown> {
  const type = mediaTypeOf(req.headers['content-type']);
  if (type?.charset !== undefined && type.charset !== 'utf-8') return refuseBody(req, 415, JSON_NOT_UTF8, 'charset.unsupported');
  return parseJsonBytes(await readBodyBytes(req, options.limit), options.strict !== false);
}

/**
 * The body of an API route: JSON up to 1 MiB (any value: the operation's
 * schema judges it), a form up to 64 KiB, or `undefined` for none or
 * another type (the schema then answers what is missing).
 */
export async function readApiBody(req: HttpRequest): Promise<unknown> {
  if (!hasBody(req)) return undefined;
  if (isJsonBody(req)) return readJsonBody(req, { limit: API_BODY_LIMIT, strict: false });
  if (isFormBody(req)) return readFormBody(req, { limit: 64 * 1024 });
  return undefined;
}

export interface FormBodyOptions {
  limit: number;
  /** The most `name=value` pairs (default 1000): more is a 413. */
  parameterLimit?: number;
}

/**
 * A form body (`application/x-www-form-urlencoded`, UTF-8 or ISO-8859-1) as
 * an object: a repeated field becomes an array of its values, in order; a
 * string that breaks the text rule is a 400 naming it; more pairs than
 * `parameterLimit` a 413.
 */
export async function readFormBody(req: HttpRequest, options: FormBodyOptions): Promise<Record<string, string | string[]>> {
  const charset = mediaTypeOf(req.headers['content-type'])?.charset ?? 'utf-8';
  if (charset !== 'utf-8' && charset !== 'iso-8859-1') return refuseBody(req, 415, `unsupported charset "${charset.toUpperCase()}"`, 'charset.unsupported');
  const bytes = await readBodyBytes(req, options.limit);
  const text = bytes.toString(charset === 'utf-8' ? 'utf8' : 'latin1');
  const out: Record<string, string | string[]> = Object.create(null);
  if (text.length === 0) return out;
  const limit = options.parameterLimit ?? 1000;
  let pairs = 1;
  for (let i = text.indexOf('&'); i !== -1; i = text.indexOf('&', i + 1))
    if (++pairs > limit) throw new BodyError(413, 'too many parameters', 'parameters.too.many');
  for (const [k, v] of new URLSearchParams(text)) {
    const prev = out[k];
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  const bad = unsafeTextIn(out);
  if (bad !== undefined) throw new BodyError(400, bad, 'entity.text.unsafe');
  return out;
}

const BOM = [0xef, 0xbb, 0xbf] as const;

/**
 * A JSON body's bytes as the gateway takes them: nesting deeper than
 * {@link MAX_JSON_DEPTH} refused on the bytes before parsing, bytes that are
 * no UTF-8 refused, a UTF-8 byte order mark dropped, an empty body read as
 * `{}`, with `strict` only an object or an array, anything JSON.parse refuses
 * a 400, a string with a control character or an unpaired surrogate (value
 * or field name, at any depth) a 400 naming it. Throws a {@link BodyError}.
 *
 * The depth scan reads the bytes as UTF-8, where no byte of a multi-byte
 * character is a quote or a bracket: that is why JSON is taken in UTF-8 only
 * (in UTF-16 a character such as U+2200 carries a quote byte and would hide
 * the nesting after it).
 */
export function parseJsonBytes(bytes: Buffer, strict: boolean): unknown {
  if (jsonTooDeep(bytes)) throw new BodyError(400, JSON_TOO_DEEP, 'entity.too.deep');
  if (!isUtf8(bytes)) throw new BodyError(400, JSON_BAD_UTF8, 'entity.text.unsafe');
  const buf = bytes.length >= 3 && bytes[0] === BOM[0] && bytes[1] === BOM[1] && bytes[2] === BOM[2] ? bytes.subarray(3) : bytes;
  if (buf.length === 0) return {};
  if (strict) {
    let i = 0;
    while (i < buf.length && (buf[i] === 0x20 || buf[i] === 0x09 || buf[i] === 0x0a || buf[i] === 0x0d)) i++;
    if (buf[i] !== OPEN_OBJECT && buf[i] !== OPEN_ARRAY) throw new BodyError(400, INVALID_JSON, 'entity.parse.failed');
  }
  let value: unknown;
  try {
    value = JSON.parse(buf.toString('utf8'));
  } catch {
    throw new BodyError(400, INVALID_JSON, 'entity.parse.failed');
  }
  const bad = mayHoldUnsafeText(buf) ? unsafeTextIn(value) : undefined;
  if (bad !== undefined) throw new BodyError(400, bad, 'entity.text.unsafe');
  const inexact = inexactNumberIn(buf);
  if (inexact !== undefined) throw new BodyError(400, inexactNumberMessage(inexact), 'entity.number.inexact');
  return value;
}

/** The 400 of a JSON number the gateway could not pass on as it was sent (docs/api.md, "Payloads arrive as sent"). */
export const inexactNumberMessage = (token: string): string =>
  `the number ${token.length > 40 ? `${token.slice(0, 40)}...` : token} cannot be carried exactly: JSON numbers must fit a 64-bit float ` +
  '(no overflow, no -0, no whole number beyond 2^53, no more digits than it keeps); send it as a string';

const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
const MINUS = 0x2d;

/**
 * The first number of a JSON text (already parsed, so well-formed) that does
 * not survive being read as a JavaScript number and written again: overflow
 * (`1e400`), underflow (`1e-400`), `-0`, whole numbers beyond 2^53, more
 * significant digits than a double keeps. Such a number would reach the
 * service changed (the call's body is re-serialised and signed), so it is
 * refused before anything is held. One pass over the bytes, strings skipped;
 * a token of at most 15 characters without an exponent is exact without a look.
 */
export function inexactNumberIn(buf: Uint8Array): string | undefined {
  let inString = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i]!;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
      continue;
    }
    if (c === QUOTE) {
      inString = true;
      continue;
    }
    if (c !== MINUS && (c < DIGIT_0 || c > DIGIT_9)) continue;
    let j = i + 1;
    let plain = true;
    for (; j < buf.length; j++) {
      const d = buf[j]!;
      if (d >= DIGIT_0 && d <= DIGIT_9) continue;
      if (d === 0x2e) continue;
      if (d === 0x65 || d === 0x45 || d === 0x2b || d === MINUS) {
        plain = false;
        continue;
      }
      break;
    }
    const negativeZero = c === MINUS && buf[i + 1] === DIGIT_0;
    if (!plain || negativeZero || j - i > 15) {
      const token = Buffer.from(buf.buffer, buf.byteOffset + i, j - i).toString('latin1');
      if (!numberIsExact(token)) return token;
    }
    i = j - 1;
  }
  return undefined;
}

/** True when `token` (a JSON number) is the decimal its double writes back: finite, not -0, no digit lost. */
function numberIsExact(token: string): boolean {
  const n = Number(token);
  if (!Number.isFinite(n) || Object.is(n, -0)) return false;
  return decimalOf(token) === decimalOf(String(n));
}

/** A number's decimal value in one spelling: sign, significant digits, exponent (`-123e-2` for -1.230). */
function decimalOf(text: string): string {
  let t = text;
  const sign = t[0] === '-' ? '-' : '';
  if (sign) t = t.slice(1);
  let exp = 0;
  const e = t.search(/[eE]/);
  if (e !== -1) {
    exp = Number(t.slice(e + 1));
    t = t.slice(0, e);
  }
  const dot = t.indexOf('.');
  if (dot !== -1) {
    exp -= t.length - dot - 1;
    t = t.slice(0, dot) + t.slice(dot + 1);
  }
  t = t.replace(/^0+/, '');
  if (t === '') return '0';
  const kept = t.replace(/0+$/, '');
  return `${sign}${kept}e${exp + t.length - kept.length}`;
}

/**
 * False when JSON bytes (UTF-8, already checked) cannot hold a string that
 * breaks the text rule, so the parsed body need not be walked: JSON.parse
 * refuses raw C0 controls inside strings and `isUtf8` refuses encoded
 * surrogates, so what is left to find comes only as an escape (`\u…`, `\b`,
 * `\f`), a DEL byte or a C1 control (bytes C2 80 to C2 9F). The call route
 * reader ({@link parseJsonBytes}) scans each body this way (native
 * searches) and walks only the rare body that has one.
 */
export function mayHoldUnsafeText(buf: Uint8Array): boolean {
  if (buf.indexOf(0x7f) !== -1) return true;
  // Escapes come in pairs (an escaped backslash skips the next one).
  for (let i = buf.indexOf(0x5c); i !== -1; i = buf.indexOf(0x5c, i + 2)) {
    const next = buf[i + 1];
    if (next === 0x75 || next === 0x62 || next === 0x66) return true;
  }
  for (let i = buf.indexOf(0xc2); i !== -1; i = buf.indexOf(0xc2, i + 1)) {
    const next = buf[i + 1]!;
    if (next >= 0x80 && next <= 0x9f) return true;
  }
  return false;
}

/**
 * The error for a parsed body with a string (a value or a field name, at any depth) that carries a
 * control character other than tab, line feed and carriage return, or an unpaired surrogate
 * (`@farebox/protocol`'s `unsafeTextIn`): `400 invalid <field>: control character U+0000 not allowed`.
 * Every form body passes here, and every JSON body the reader scanned as possibly holding one (`parseJsonBytes`).
 */
export function unsafeTextError(body: unknown): Error | undefined {
  const message = unsafeTextIn(body);
  return message === undefined ? undefined : Object.assign(new Error(message), { status: 400, expose: true, type: 'entity.text.unsafe' });
}

/** True for the error a route raises on a path parameter that is not valid percent-encoding. */
export function isMalformedUrl(err: unknown): boolean {
  return err instanceof URIError || (err instanceof Error && /^Failed to decode param/.test(err.message));
}

/**
 * The answer to input the parsers refused (a body or a path), or undefined for any other error:
 * every route's error handler uses it, so no such input reaches a 500.
 */
export function inputError(err: unknown): { status: number; message: string } | undefined {
  const e = err as { type?: string; status?: number; expose?: boolean; message?: string } | undefined;
  switch (e?.type) {
    case 'entity.parse.failed':
      return { status: 400, message: INVALID_JSON };
    case 'entity.too.deep':
      return { status: 400, message: JSON_TOO_DEEP };
    case 'entity.text.unsafe':
      return { status: 400, message: e.message ?? 'invalid text' };
    case 'entity.too.large':
      return { status: 413, message: BODY_TOO_LARGE };
    case 'charset.unsupported':
      return { status: 415, message: e.message === JSON_NOT_UTF8 ? JSON_NOT_UTF8 : UNSUPPORTED_ENCODING };
    case 'encoding.unsupported':
      return { status: 415, message: UNSUPPORTED_ENCODING };
  }
  if (isMalformedUrl(err)) return { status: 400, message: MALFORMED_URL };
  // Any other refusal of the body parsers (an aborted or mis-sized body, too many parameters): its own 4xx.
  if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500 && e.expose && typeof e.type === 'string')
    return { status: e.status, message: e.message ?? 'bad request' };
  return undefined;
}
