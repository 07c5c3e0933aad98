import { GatewayError } from '@farebox/gateway-core';
import { stringHeader, type HttpRequest } from './http.js';

/** `Idempotency-Key`: 1 to 255 characters when sent. */
export function idempotencyKey(req: Pick<HttpRequest, 'headers'>): string | undefined {
  const key = stringHeader(req, 'idempotency-key');
  if (key === undefined) return undefined;
  if (key.length === 0 || key.length > 255) throw new GatewayError('BAD_REQUEST', 'invalid Idempotency-Key (1 to 255 characters)');
  return key;
}
