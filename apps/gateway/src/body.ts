import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import express from 'express';
import { unsafeTextIn } from '@farebox/protocol';

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

/**
 * `express.json` with the depth limit: a deeper body fails with `type: 'entity.too.deep'` (answered 400).
 * The scan reads the bytes as UTF-8, where no byte of a multi-byte character is a quote or a bracket, so
 * JSON is taken in UTF-8 only (RFC 8259 8.1): in UTF-16 a character such as U+2200 carries a quote byte and
 * would hide the nesting after it.
 */
export function jsonBody(options: { limit: string | number; strict?: boolean }): express.RequestHandler {
  return checkedText(
    express.json({
      ...options,
      verify: (_req: IncomingMessage, _res, buf: Buffer, encoding: string) => {
        if (encoding.toLowerCase() !== 'utf-8') throw Object.assign(new Error(JSON_NOT_UTF8), { status: 415, type: 'charset.unsupported' });
        if (jsonTooDeep(buf)) throw Object.assign(new Error(JSON_TOO_DEEP), { status: 400, type: 'entity.too.deep' });
        if (!isUtf8(buf)) throw Object.assign(new Error(JSON_BAD_UTF8), { status: 400, expose: true, type: 'entity.text.unsafe' });
      },
    }),
  );
}

/**
 * False when JSON bytes (UTF-8, already checked) cannot hold a string that
 * breaks the text rule, so the parsed body need not be walked: JSON.parse
 * refuses raw C0 controls inside strings and `isUtf8` refuses encoded
 * surrogates, so what is left to find comes only as an escape (`\u…`, `\b`,
 * `\f`), a DEL byte or a C1 control (bytes C2 80 to C2 9F). The call route
 * scans each body this way (native searches) and walks only the rare body
 * that has one.
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

/** `express.urlencoded` with the same text rule as JSON bodies. */
export function formBody(options: { limit: string | number; parameterLimit?: number }): express.RequestHandler {
  return checkedText(express.urlencoded({ extended: false, ...options }));
}

/**
 * The error for a parsed body with a string (a value or a field name, at any depth) that carries a
 * control character other than tab, line feed and carriage return, or an unpaired surrogate
 * (`@farebox/protocol`'s `unsafeTextIn`): `400 invalid <field>: control character U+0000 not allowed`.
 * Every body of every route passes here (and the express-free call route's reader), before any handler.
 */
export function unsafeTextError(body: unknown): Error | undefined {
  const message = unsafeTextIn(body);
  return message === undefined ? undefined : Object.assign(new Error(message), { status: 400, expose: true, type: 'entity.text.unsafe' });
}

/** Runs a body parser, then refuses the body it parsed if a string in it breaks the text rule. */
function checkedText(parser: express.RequestHandler): express.RequestHandler {
  return (req, res, next) => {
    const before = req.body;
    parser(req, res, (err?: unknown) => {
      if (err) return next(err);
      // Only a body this parser read (another parser may have read it first and been checked then).
      if (req.body !== before) {
        const bad = unsafeTextError(req.body);
        if (bad) return next(bad);
      }
      next();
    });
  };
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
      return { status: 415, message: e.message === JSON_NOT_UTF8 ? JSON_NOT_UTF8 : 'unsupported body encoding' };
    case 'encoding.unsupported':
      return { status: 415, message: 'unsupported body encoding' };
  }
  if (isMalformedUrl(err)) return { status: 400, message: MALFORMED_URL };
  // Any other refusal of the body parsers (an aborted or mis-sized body, too many parameters): its own 4xx.
  if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500 && e.expose && typeof e.type === 'string') return { status: e.status, message: e.message ?? 'bad request' };
  return undefined;
}
