import { request } from 'undici';
import { ManifestSchema, manifestUrl, type Manifest } from '@farebox/protocol';
import { GatewayError } from './errors.js';
import { checkEndpoint, guardedDispatcher, type EndpointPolicy } from './security/endpoint-guard.js';
import { systemClock } from './clock.js';

/** What a caller may want to know before paying, from the service's own `/manifest`. */
export interface ManifestView {
  service: string;
  pricing_note: string | null;
  dynamic_pricing: boolean;
  payments: string[];
  manifest_url: string;
  fetched_at: string;
}

export interface ManifestsOptions {
  policy: EndpointPolicy;
  /** Per fetch (default 3 s). */
  timeoutMs?: number;
  /** Largest manifest read (default 64 KiB). */
  maxBytes?: number;
  /** How long a fetched manifest is reused (default 5 minutes). */
  ttlMs?: number;
  now?: () => number;
}

/**
 * Fetches services' manifests for the catalog (the pricing note of a dynamic
 * price), through the same address guard as calls: no redirects, private
 * addresses refused, a time and size limit. A manifest that names another
 * service or owner than the registry is refused, so a note can only come
 * from the registered service. Answers are cached per endpoint.
 */
export function createManifests(options: ManifestsOptions) {
  const timeoutMs = options.timeoutMs ?? 3_000;
  const maxBytes = options.maxBytes ?? 64 * 1024;
  const ttlMs = options.ttlMs ?? 5 * 60_000;
  const now = options.now ?? systemClock;
  const dispatcher = guardedDispatcher(options.policy, { keepAliveTimeout: 5_000, connections: 16 });
  const cache = new Map<string, { view: ManifestView; bazaar: unknown; until: number }>();

  async function fetchManifest(url: string): Promise<{ manifest: Manifest; bazaar: unknown }> {
    let res;
    try {
      res = await request(url, {
        dispatcher,
        method: 'GET',
        headers: { accept: 'application/json' },
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal: AbortSignal.timeout(timeoutMs),
      } as Parameters<typeof request>[1]);
    } catch (err) {
      const e = err as { name?: string; code?: string; cause?: { code?: string } };
      if (e.name === 'TimeoutError' || e.name === 'AbortError' || e.code === 'UND_ERR_HEADERS_TIMEOUT')
        throw new GatewayError('UPSTREAM', `service manifest unavailable: timed out after ${timeoutMs} ms`);
      throw new GatewayError('UPSTREAM', `service manifest unavailable: ${e.cause?.code ?? e.code ?? 'connection failed'}`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > maxBytes) {
        res.body.destroy();
        throw new GatewayError('UPSTREAM', 'service manifest unavailable: too large');
      }
      chunks.push(chunk as Buffer);
    }
    if (res.statusCode !== 200) throw new GatewayError('UPSTREAM', `service manifest unavailable: status ${res.statusCode}`);
    let json: unknown;
    try {
      json = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      throw new GatewayError('UPSTREAM', 'service manifest unavailable: invalid JSON');
    }
    const parsed = ManifestSchema.safeParse(json);
    if (!parsed.success) throw new GatewayError('UPSTREAM', 'service manifest unavailable: not a Farebox manifest');
    // The x402 `bazaar` extension (input/output description), read for the bazaar catalog as the service wrote it.
    return { manifest: parsed.data, bazaar: (json as { bazaar?: unknown }).bazaar };
  }

  const keyOf = (entry: { service: string; owner: string; endpoint: string }) => `${entry.endpoint}\u0000${entry.service}\u0000${entry.owner}`;

  /** The view and the manifest's `bazaar` extension (undefined when it has none), fetched when not cached. */
  async function details(entry: { service: string; owner: string; endpoint: string }): Promise<{ view: ManifestView; bazaar: unknown }> {
    const key = keyOf(entry);
    const hit = cache.get(key);
    if (hit && hit.until > now()) return hit;
    try {
      await checkEndpoint(entry.endpoint, options.policy);
    } catch (err) {
      throw new GatewayError('UPSTREAM', `service manifest unavailable: ${(err as Error).message}`);
    }
    const url = manifestUrl(entry.endpoint);
    const { manifest, bazaar } = await fetchManifest(url);
    if (manifest.service !== entry.service || manifest.ownerWallet !== entry.owner) {
      throw new GatewayError('UPSTREAM', 'service manifest unavailable: it does not match the registry record');
    }
    const view: ManifestView = {
      service: entry.service,
      pricing_note: manifest.pricingNote ?? null,
      dynamic_pricing: manifest.dynamicPricing,
      payments: manifest.payments,
      manifest_url: url,
      fetched_at: new Date(now()).toISOString(),
    };
    if (cache.size >= 1_000) cache.delete(cache.keys().next().value!);
    const entryOut = { view, bazaar, until: now() + ttlMs };
    cache.set(key, entryOut);
    return entryOut;
  }

  return {
    /** The manifest view of a registered service (`service`, `owner` and `endpoint` from the registry). */
    async get(entry: { service: string; owner: string; endpoint: string }): Promise<ManifestView> {
      return (await details(entry)).view;
    },
    details,
    /** What `details` would answer from the cache alone (nothing fetched). */
    peek(entry: { service: string; owner: string; endpoint: string }): { view: ManifestView; bazaar: unknown } | undefined {
      const hit = cache.get(keyOf(entry));
      return hit && hit.until > now() ? hit : undefined;
    },
    async close() {
      await dispatcher.close();
    },
  };
}
