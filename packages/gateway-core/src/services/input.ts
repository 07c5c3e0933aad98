import type { z } from 'zod';
import { GatewayError } from '../errors.js';

/** The message zod gives a strict object for a field it does not know. */
export const unknownField = (iss: { code?: string; keys?: readonly string[] }): string | undefined =>
  iss.code === 'unrecognized_keys' ? `unknown field: ${(iss.keys ?? []).join(', ')}` : undefined;

/** Parses a request body; the first problem is the `400` answer. */
export function parse<T>(schema: z.ZodType<T>, input: unknown): T {
  const r = schema.safeParse(input ?? {});
  if (!r.success) throw new GatewayError('BAD_REQUEST', r.error.issues[0]?.message ?? 'invalid input');
  return r.data;
}
