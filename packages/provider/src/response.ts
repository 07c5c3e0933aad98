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
