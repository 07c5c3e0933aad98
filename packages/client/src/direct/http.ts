import { createServiceRequester } from '@farebox/escrow';
import { z } from 'zod';
import { ClientError } from '../errors.js';

/** A service's or the platform's answer, read once: status, headers, the JSON body when it parses, and the raw text. */
export interface Answer {
  status: number;
  headers: Headers;
  json: unknown;
  text: string;
}

/** One HTTP request of the direct client, with its timeout; never follows redirects. */
export type Requester = (url: string, init: RequestInit & { signal?: AbortSignal }) => Promise<Answer>;

const ErrorBodySchema = z.object({ error: z.string() });

export function errorText(e: unknown): string {
  return e instanceof Error && e.message ? e.message : String(e);
}

export function createRequester(doFetch: typeof fetch, timeoutMs: number): Requester {
  return createServiceRequester(doFetch, timeoutMs, (message) => new ClientError('NETWORK', message));
}

/** The server's `{ error }` message, or the start of its body. */
export function serverMessage(json: unknown, text: string): string {
  const parsed = ErrorBodySchema.safeParse(json);
  return parsed.success ? parsed.data.error : text.slice(0, 300);
}
