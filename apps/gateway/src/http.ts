import type { ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { asDatabaseUnavailable, callIdOf, errorAnswer, GatewayError, HTTP_STATUS, type GatewayErrorCode } from '@farebox/gateway-core';
import { inputError } from './body.js';

/** Wraps an async route so a rejection reaches the error handler. */
export const route =
  (fn: (req: Request, res: Response) => Promise<unknown>) =>
  (req: Request, res: Response, next: NextFunction): void => {
    fn(req, res).catch(next);
  };

/** Parses the Cookie header (RFC 6265 pairs; no dependency needed). */
export function readCookies(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!header) return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    if (!name || name in out) continue;
    const raw = part
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1');
    try {
      out[name] = decodeURIComponent(raw);
    } catch {
      out[name] = raw;
    }
  }
  return out;
}

/** Headers every answer carries. */
export function setSecurityHeaders(res: ServerResponse): void {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
}

/** The code of an error answer the body reader gives (413, 415 or 400). */
export function bodyErrorCode(status: number): GatewayErrorCode {
  return status === 413 ? 'PAYLOAD_TOO_LARGE' : status === 415 ? 'UNSUPPORTED_MEDIA_TYPE' : 'BAD_REQUEST';
}

/** The JSON of an error answer that is no {@link GatewayError}: `{ "error": message, "code": code }`. */
export const errorJson = (code: GatewayErrorCode, message: string): string => JSON.stringify({ error: message, code });

/**
 * The answer to a {@link GatewayError}: its status from the code table, its
 * headers set on `res`, the body `{ error, code, ...details }`
 * ({@link errorAnswer}: the same fields `/mcp` and the adapter give), and the
 * rate-limit rule that refused the request, if one did (for the access log and metrics).
 */
export function gatewayErrorAnswer(
  err: GatewayError,
  res: ServerResponse,
  thrown: unknown = err,
): { status: number; body: string; rateLimitRule: string | undefined } {
  for (const [k, v] of Object.entries(err.headers ?? {})) res.setHeader(k, v);
  const rule = err.code === 'RATE_LIMITED' && typeof err.data?.rule === 'string' ? err.data.rule : undefined;
  return { status: HTTP_STATUS[err.code], body: JSON.stringify(errorAnswer(err, callIdOf(thrown))), rateLimitRule: rule };
}

/** The one error handler: `{ "error": message }` with the status of the code table. */
export function errorHandler(log: (message: string, err: unknown) => void) {
  return (thrown: unknown, _req: Request, res: Response, _next: NextFunction): void => {
    if (res.headersSent) return;
    // A lost database is a 503 with Retry-After, never a 500 (docs/api.md "Errors").
    const err = asDatabaseUnavailable(thrown) ?? thrown;
    if (err instanceof GatewayError) {
      const answer = gatewayErrorAnswer(err, res, thrown);
      // The access log counts refusals by rule (farebox_rate_limited_total).
      if (answer.rateLimitRule !== undefined) res.locals.rateLimitRule = answer.rateLimitRule;
      res.status(answer.status).type('application/json').send(answer.body);
      return;
    }
    const bad = inputError(err);
    if (bad) {
      res
        .status(bad.status)
        .type('application/json')
        .send(errorJson(bodyErrorCode(bad.status), bad.message));
      return;
    }
    const e = err as { type?: string; status?: number; expose?: boolean };
    if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500 && e.expose) {
      res
        .status(e.status)
        .type('application/json')
        .send(errorJson(bodyErrorCode(e.status), (err as Error).message));
      return;
    }
    log('request failed', err);
    res.status(500).type('application/json').send(errorJson('INTERNAL', 'internal error'));
  };
}
