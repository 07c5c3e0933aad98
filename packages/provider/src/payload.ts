// A paid request's payload: its JSON, and its price.
import { parseAmount } from '@farebox/protocol';
import type { Price } from './config.js';
import { fail, type ProviderResponse } from './response.js';

const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

/** Price of a payload in base units (at least `floor`), or the response to give when it cannot be priced. */
export async function pricePayload(
  priceFn: ((payload: unknown) => Price | Promise<Price>) | undefined,
  floor: bigint,
  payload: unknown,
): Promise<bigint | ProviderResponse> {
  if (!priceFn) return floor;
  let value: unknown;
  try {
    value = await priceFn(payload);
  } catch (e) {
    return fail(400, `could not price this payload: ${e instanceof Error ? e.message : String(e)}`);
  }
  let units: bigint;
  try {
    if (typeof value !== 'number' && typeof value !== 'string') throw new Error('not a number or a decimal string');
    units = parseAmount(value);
  } catch (e) {
    return fail(500, `priceFn returned an invalid price ${JSON.stringify(value) ?? String(value)}: ${(e as Error).message}`);
  }
  return units > floor ? units : floor;
}

/** The JSON payload of the raw body (or the host's parsed body), or a 400. */
export function parsePayload(raw: Uint8Array | undefined, body: unknown): { ok: true; payload: unknown } | { ok: false; response: ProviderResponse } {
  if (!raw) return { ok: true, payload: body ?? null };
  if (raw.length === 0) return { ok: true, payload: null };
  try {
    return { ok: true, payload: JSON.parse(utf8Decoder.decode(raw)) };
  } catch {
    return { ok: false, response: fail(400, 'invalid JSON body') };
  }
}
