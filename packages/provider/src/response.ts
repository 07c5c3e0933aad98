import { CERTIFICATE_VERSIONS, CERTIFICATE_VERSIONS_HEADER } from '@farebox/protocol';
import type { HeadersInput } from './provider.js';

/** What the core answers; hosts write it as JSON. */
export interface ProviderResponse {
  status: number;
  headers: Record<string, string>;
  /** A JSON value; errors are `{ error: string }`, 402s the x402 v1 quote body. */
  body: unknown;
}

/** JSON text computed while checking that a handler's result serialises, reused by the node hosts. */
export const serialized = new WeakMap<ProviderResponse, string>();

/** `262144` -> `256kb`. */
export function formatLimit(bytes: number): string {
  if (bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)}mb`;
  if (bytes % 1024 === 0) return `${bytes / 1024}kb`;
  return `${bytes}b`;
}

// Every answer says which certificate versions this provider verifies, so a gateway may send it batch-signed (v2) ones.
const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', [CERTIFICATE_VERSIONS_HEADER]: CERTIFICATE_VERSIONS } as const;

export function respond(status: number, body: unknown, headers: Record<string, string> = {}): ProviderResponse {
  return { status, headers: { ...JSON_HEADERS, ...headers }, body };
}

export function fail(status: number, error: string, headers: Record<string, string> = {}): ProviderResponse {
  return respond(status, { error }, headers);
}

/** A request header by its lower-case name, from a Headers object or a plain record (any case; the first of a list). */
export function readHeader(headers: HeadersInput | undefined, name: string): string | undefined {
  if (!headers) return undefined;
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  let value = record[name];
  if (value === undefined) {
    for (const key of Object.keys(record)) {
      if (key.toLowerCase() === name) {
        value = record[key];
        break;
      }
    }
  }
  return Array.isArray(value) ? value[0] : value;
}
