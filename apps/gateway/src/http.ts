import type { ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { asDatabaseUnavailable, GatewayError, HTTP_STATUS } from '@farebox/gateway-core';
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

/**
 * The answer to a {@link GatewayError}: its status from the code table, its
 * headers set on `res`, the body `{ "error": message }`, and the rate-limit
 * rule that refused the request, if one did (for the access log and metrics).
 */
export function gatewayErrorAnswer(err: GatewayError, res: ServerResponse): { status: number; body: string; rateLimitRule: string | undefined } {
  for (const [k, v] of Object.entries(err.headers ?? {})) res.setHeader(k, v);
  const rule = err.code === 'RATE_LIMITED' && typeof err.data?.rule === 'string' ? err.data.rule : undefined;
  // A spending policy's refusal, and one with a machine-readable `code`, carry their fields next to `error` (docs/api.md).
  const fields = err.data && ('limit_source' in err.data || 'code' in err.data) ? err.data : undefined;
  return { status: HTTP_STATUS[err.code], body: JSON.stringify({ error: err.message, ...fields }), rateLimitRule: rule };
}

/** The one error handler: `{ "error": message }` with the status of the code table. */
export function errorHandler(log: (message: string, err: unknown) => void) {
  return (thrown: unknown, _req: Request, res: Response, _next: NextFunction): void => {
    if (res.headersSent) return;
    // A lost database is a 503 with Retry-After, never a 500 (docs/api.md "Errors").
    const err = asDatabaseUnavailable(thrown) ?? thrown;
    if (err instanceof GatewayError) {
      const answer = gatewayErrorAnswer(err, res);
      // The access log counts refusals by rule (farebox_rate_limited_total).
      if (answer.rateLimitRule !== undefined) res.locals.rateLimitRule = answer.rateLimitRule;
      res.status(answer.status).type('application/json').send(answer.body);
      return;
    }
    const bad = inputError(err);
    if (bad) {
      res.status(bad.status).json({ error: bad.message });
      return;
    }
    const e = err as { type?: string; status?: number; expose?: boolean };
    if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500 && e.expose) {
      res.status(e.status).json({ error: (err as Error).message });
      return;
    }
    log('request failed', err);
    res.status(500).json({ error: 'internal error' });
  };
}
