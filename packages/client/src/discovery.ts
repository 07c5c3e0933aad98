import { createDiscoveryClient as createReader, DiscoveryApiError, type DiscoveryClient } from '@farebox/contract';
import { ClientError, type ClientErrorCode } from './errors.js';

export type { DiscoveryClient, DiscoveryService, DiscoveryHit, DiscoverySearchResult, DiscoveryPage } from '@farebox/contract';

export interface DiscoveryClientOptions {
  /** The discovery backend's address; default `FAREBOX_DISCOVERY_URL`, then `BACKEND_URL`. */
  url?: string;
  /** Timeout per request, ms (default 10 000). */
  timeoutMs?: number;
  fetch?: typeof fetch;
  env?: Record<string, string | undefined>;
}

const CODES: Record<DiscoveryApiError['code'], ClientErrorCode> = {
  CONFIG: 'CONFIG',
  NETWORK: 'NETWORK',
  BAD_RESPONSE: 'BAD_RESPONSE',
  NOT_FOUND: 'NOT_FOUND',
  HTTP: 'GATEWAY_API',
};

/** The reader's errors as this package's own: the same message and data, under a {@link ClientError} code. */
function asClientError(err: unknown): unknown {
  return err instanceof DiscoveryApiError ? new ClientError(CODES[err.code], err.message, { ...err.data }, { cause: err }) : err;
}

async function clientErrors<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw asClientError(err);
  }
}

/**
 * Reads a discovery backend (`farebox-discovery`): search and the catalog with
 * no account, for direct x402 callers. Pair it with `createClient().call()`
 * to pay what it finds. (The reader itself is `@farebox/contract`'s, shared
 * with the gateway; this one adds the environment fallbacks and throws
 * {@link ClientError}s.)
 *
 * @example
 * const discovery = createDiscoveryClient({ url: 'https://discovery.farebox.example' });
 * const { results } = await discovery.search('convert dollars to euros');
 * await createClient({ secret, escrow: { apiKey }, platformAddress }).call(results[0].service, { amount: 100 });
 */
export function createDiscoveryClient(options: DiscoveryClientOptions = {}): DiscoveryClient {
  const env = options.env ?? (typeof process !== 'undefined' ? process.env : {});
  const url = options.url ?? env.FAREBOX_DISCOVERY_URL ?? env.BACKEND_URL;
  if (!url) throw new ClientError('CONFIG', 'createDiscoveryClient: url required (or FAREBOX_DISCOVERY_URL)');
  let reader: DiscoveryClient;
  try {
    reader = createReader({
      url,
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
  } catch (err) {
    throw asClientError(err);
  }
  return {
    url: reader.url,
    search: (query, opts) => clientErrors(() => reader.search(query, opts)),
    listServices: (opts) => clientErrors(() => reader.listServices(opts)),
    listAllServices: () => clientErrors(() => reader.listAllServices()),
    getService: (service) => clientErrors(() => reader.getService(service)),
    health: () => clientErrors(() => reader.health()),
  };
}
