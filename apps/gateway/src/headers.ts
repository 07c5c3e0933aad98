import type { IncomingMessage } from 'node:http';
import { GatewayError } from '@farebox/gateway-core';

/** A request header sent once, as a string (a repeated header is an array and is ignored). */
export function stringHeader(req: Pick<IncomingMessage, 'headers'>, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === 'string' ? v : undefined;
}

/** `Idempotency-Key`: 1 to 255 characters when sent. */
export function idempotencyKey(req: Pick<IncomingMessage, 'headers'>): string | undefined {
  const key = stringHeader(req, 'idempotency-key');
  if (key === undefined) return undefined;
  if (key.length === 0 || key.length > 255) throw new GatewayError('BAD_REQUEST', 'invalid Idempotency-Key (1 to 255 characters)');
  return key;
}
