import type { IncomingMessage } from 'node:http';
import express from 'express';

/** The deepest JSON body any route accepts: deeper nesting is refused before parsing (no handler ever walks it). */
export const MAX_JSON_DEPTH = 64;
export const JSON_TOO_DEEP = `JSON nested too deeply (max depth ${MAX_JSON_DEPTH})`;
export const MALFORMED_URL = 'malformed percent-encoding in the URL';

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

/** `express.json` with the depth limit: a deeper body fails with `type: 'entity.too.deep'` (answered 400). */
export function jsonBody(options: { limit: string; strict?: boolean }): express.RequestHandler {
  return express.json({
    ...options,
    verify: (_req: IncomingMessage, _res, buf: Buffer) => {
      if (jsonTooDeep(buf)) throw Object.assign(new Error(JSON_TOO_DEEP), { status: 400, type: 'entity.too.deep' });
    },
  });
}

/** True for the error a route raises on a path parameter that is not valid percent-encoding. */
export function isMalformedUrl(err: unknown): boolean {
  return err instanceof URIError || (err instanceof Error && /^Failed to decode param/.test(err.message));
}
