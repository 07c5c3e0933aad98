const UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };
const LIMIT = /^(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)?$/i;

/** Largest body limit accepted: 64 MiB. */
export const MAX_BODY_LIMIT = 64 * 1024 ** 2;

/**
 * Parses a body limit such as `'256kb'`, `'1mb'`, `'512b'` or a byte count
 * (units are powers of 1024, as in express). Returns null when invalid.
 */
export function parseBodyLimit(input: string | number): number | null {
  let bytes: number;
  if (typeof input === 'number') {
    bytes = input;
  } else if (typeof input === 'string') {
    const m = LIMIT.exec(input.trim());
    if (!m) return null;
    bytes = Math.floor(Number(m[1]) * (UNITS[(m[2] ?? 'b').toLowerCase()] ?? 1));
  } else {
    return null;
  }
  if (!Number.isSafeInteger(bytes) || bytes < 1 || bytes > MAX_BODY_LIMIT) return null;
  return bytes;
}
