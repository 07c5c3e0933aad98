import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import { z } from 'zod';
import { checkEndpoint, guardedLookup, type EndpointPolicy } from '../security/endpoint-guard.js';
import { redirectUriProblem } from './redirects.js';
import type { OAuthStore } from './store.js';
import type { OAuthClient } from './types.js';

/**
 * OAuth Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document,
 * the MCP authorization spec's preferred way for a client to identify itself):
 * the `client_id` is an https URL, and the JSON document served there is the
 * client's metadata. The gateway fetches it at `/authorize` through the same
 * endpoint guard as service calls (no private addresses; loopback only when
 * loopback endpoints are allowed), within a size and a time limit, without
 * following redirects, and caches it as its HTTP cache headers allow (bounded).
 */
export interface ClientMetadataOptions {
  /** Largest document accepted, in bytes (default 5120). */
  maxBytes?: number;
  /** Time limit of one fetch, in milliseconds (default 5000). */
  timeoutMs?: number;
  /** Documents kept in memory at most (default 500; the least recently used leaves first). */
  cacheEntries?: number;
  /** Longest a document is cached, whatever its headers say, in milliseconds (default 24 h). */
  maxCacheMs?: number;
  /** Extra certificate authorities (PEM) trusted for the fetch, besides the system's: the tests' self-signed certificate. */
  ca?: string | string[];
}

/** What `/authorize` shows and checks of a client identified by its metadata document. */
export interface ClientMetadataDocuments {
  /** The client of a metadata document URL (fetched, validated, and stored as a client row), or why it cannot be used. */
  client(url: string): Promise<{ ok: true; client: OAuthClient } | { ok: false; message: string }>;
}

const MAX_URL = 2048;

/** True when a `client_id` names a metadata document (an https URL) rather than a registered client. */
export const isMetadataDocumentUrl = (clientId: string): boolean => clientId.startsWith('https://') && clientId.length <= MAX_URL;

/** Why `clientId` cannot be a metadata document URL (the draft's rules), or undefined. */
export function metadataUrlProblem(clientId: string): string | undefined {
  let u: URL;
  try {
    u = new URL(clientId);
  } catch {
    return 'client_id is not a valid URL';
  }
  if (u.protocol !== 'https:') return 'a client_id URL must use https';
  if (u.username || u.password) return 'a client_id URL must not carry credentials';
  if (clientId.includes('#')) return 'a client_id URL must not have a fragment';
  if (u.pathname === '/' || u.pathname === '') return 'a client_id URL must have a path';
  // `.` and `..` segments, percent-encoded too (URL parsing would resolve them away).
  if (/\/(?:\.|%2e){1,2}(?:\/|$)/i.test(clientId.replace(/[?#].*$/, '').slice(u.origin.length))) return 'a client_id URL must not have dot segments';
  return undefined;
}

const DocumentSchema = z.object({
  client_id: z.string({ error: 'client_id missing' }),
  redirect_uris: z
    .array(z.string().max(2048), { error: 'redirect_uris missing (an array of URLs)' })
    .min(1, 'redirect_uris missing (an array of URLs)')
    .max(10, 'at most 10 redirect_uris'),
  client_name: z.string({ error: 'client_name must be a string' }).max(200, 'client_name too long').optional(),
  client_uri: z.string().max(2048).optional(),
  logo_uri: z.string().max(2048).optional(),
  token_endpoint_auth_method: z.string().optional(),
  grant_types: z.array(z.string()).optional(),
  response_types: z.array(z.string()).optional(),
});

/**
 * How long a response may still be cached, in ms (RFC 9111 4.2: its freshness
 * lifetime, `Cache-Control` max-age, or `Expires` less `Date`, minus its `Age`
 * from caches on the way); 0 for not at all (`no-store`, `no-cache`, `private`,
 * no freshness information). At most `maxMs`.
 */
export function cacheLifetime(headers: Headers, now: number, maxMs: number): number {
  const cc = (headers.get('cache-control') ?? '').toLowerCase();
  if (/(^|,)\s*(no-store|no-cache|private)\b/.test(cc)) return 0;
  const maxAge = /(?:^|,)\s*max-age\s*=\s*"?(\d+)"?/.exec(cc);
  let lifetime: number;
  if (maxAge) lifetime = Number(maxAge[1]) * 1000;
  else {
    const expires = headers.get('expires');
    const at = expires ? Date.parse(expires) : Number.NaN;
    if (Number.isNaN(at)) return 0;
    // Expires is read against the origin's own Date (clock skew), our clock without one.
    const date = Date.parse(headers.get('date') ?? '');
    lifetime = at - (Number.isNaN(date) ? now : date);
  }
  const ageHeader = headers.get('age')?.trim() ?? '';
  const age = /^\d+$/.test(ageHeader) ? Number(ageHeader) * 1000 : 0;
  return Math.max(0, Math.min(lifetime - age, maxMs));
}

export function createClientMetadataDocuments(o: {
  store: OAuthStore;
  policy: EndpointPolicy;
  now: () => number;
  options?: ClientMetadataOptions;
}): ClientMetadataDocuments {
  const maxBytes = o.options?.maxBytes ?? 5120;
  const timeoutMs = o.options?.timeoutMs ?? 5000;
  const cacheEntries = o.options?.cacheEntries ?? 500;
  const maxCacheMs = o.options?.maxCacheMs ?? 24 * 3600 * 1000;
  const ca = o.options?.ca;
  // The endpoint guard at connect (DNS rebinding), with the extra CAs for TLS when given.
  const byPort = new Map<number, buildConnector.connector>();
  const dispatcher = new Agent({
    keepAliveTimeout: 5_000,
    connections: 8,
    connect: (options, callback) => {
      const port = Number(options.port) || 443;
      let connect = byPort.get(port);
      if (!connect) {
        const tls = ca ? { ca: [...(Array.isArray(ca) ? ca : [ca])] } : {};
        byPort.set(port, (connect = buildConnector({ lookup: guardedLookup(o.policy, port) as never, ...tls })));
      }
      connect(options, callback);
    },
  });
  const cache = new Map<string, { client: OAuthClient; until: number }>();

  async function fetchDocument(url: string): Promise<{ body: unknown; lifetime: number }> {
    // Registration-time check (a clear reason for an IP literal or a host resolving to a private address), then the guard at connect.
    await checkEndpoint(url, o.policy);
    let res: Awaited<ReturnType<typeof undiciFetch>>;
    try {
      res = await undiciFetch(url, {
        dispatcher,
        redirect: 'manual',
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      const e = err as { name?: string; cause?: { code?: string; message?: string } };
      if (e?.name === 'TimeoutError') throw new Error(`no answer within ${timeoutMs} ms`);
      if (e?.cause?.code === 'EFAREBOX_BLOCKED') throw new Error(e.cause.message ?? 'address not allowed');
      throw new Error(`cannot fetch it (${e?.cause?.message ?? (err as Error).message})`);
    }
    if (res.status !== 200) {
      await res.body?.cancel().catch(() => undefined);
      throw new Error(res.status >= 300 && res.status < 400 ? 'it answered with a redirect (not followed)' : `it answered HTTP ${res.status}`);
    }
    const declared = Number(res.headers.get('content-length') ?? NaN);
    if (declared > maxBytes) {
      await res.body?.cancel().catch(() => undefined);
      throw new Error(`larger than ${maxBytes} bytes`);
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of res.body ?? []) {
      size += (chunk as Uint8Array).byteLength;
      if (size > maxBytes) throw new Error(`larger than ${maxBytes} bytes`);
      chunks.push(chunk as Uint8Array);
    }
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      throw new Error('not JSON');
    }
    return { body, lifetime: cacheLifetime(res.headers as unknown as Headers, o.now(), maxCacheMs) };
  }

  function validate(url: string, body: unknown): OAuthClient & { metadata: Record<string, unknown> } {
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw new Error('not a JSON object');
    const parsed = DocumentSchema.safeParse(body);
    if (!parsed.success) throw new Error(parsed.error.issues[0]?.message ?? 'invalid document');
    const d = parsed.data;
    if (d.client_id !== url) throw new Error('its client_id is not the URL it was fetched from');
    const raw = body as Record<string, unknown>;
    if ('client_secret' in raw || 'client_secret_expires_at' in raw) throw new Error('a metadata document must not carry a client secret');
    const method = d.token_endpoint_auth_method ?? 'none';
    if (method !== 'none') throw new Error(`token_endpoint_auth_method ${method} is not supported for a metadata document (none only)`);
    const badGrant = (d.grant_types ?? []).find((g) => g !== 'authorization_code' && g !== 'refresh_token');
    if (badGrant) throw new Error(`grant type ${badGrant} is not supported`);
    const badResponse = (d.response_types ?? []).find((r) => r !== 'code');
    if (badResponse) throw new Error(`response type ${badResponse} is not supported`);
    for (const uri of d.redirect_uris) {
      const problem = redirectUriProblem(uri);
      if (problem) throw new Error(problem);
    }
    const https = (s: string | undefined) => (s?.startsWith('https://') ? s : undefined);
    const clientName = d.client_name?.trim() || new URL(url).host;
    const metadata = {
      client_id_metadata_document: true,
      client_name: clientName,
      redirect_uris: d.redirect_uris,
      token_endpoint_auth_method: 'none',
      ...(https(d.client_uri) ? { client_uri: d.client_uri } : {}),
      ...(https(d.logo_uri) ? { logo_uri: d.logo_uri } : {}),
    };
    return {
      clientId: url,
      clientName,
      redirectUris: d.redirect_uris,
      tokenEndpointAuthMethod: 'none',
      clientUri: https(d.client_uri),
      metadataDocumentHost: new URL(url).host,
      metadata,
    };
  }

  return {
    async client(url) {
      const problem = metadataUrlProblem(url);
      if (problem) return { ok: false, message: problem };
      const hit = cache.get(url);
      if (hit && hit.until > o.now()) {
        // Most recently used last (the Map's order is the eviction order).
        cache.delete(url);
        cache.set(url, hit);
        return { ok: true, client: hit.client };
      }
      cache.delete(url);
      let client: ReturnType<typeof validate>;
      let lifetime: number;
      try {
        const fetched = await fetchDocument(url);
        client = validate(url, fetched.body);
        lifetime = fetched.lifetime;
      } catch (err) {
        return { ok: false, message: `the client metadata document at ${url} cannot be used: ${(err as Error).message}` };
      }
      // Stored as a client row: the token endpoint, connections and codes refer to it like to a registered client.
      await o.store.upsertMetadataClient({
        clientId: url,
        clientName: client.clientName,
        redirectUris: client.redirectUris,
        metadata: client.metadata,
        createdAt: new Date(o.now()),
      });
      const { metadata: _stored, ...view } = client;
      if (lifetime > 0) {
        cache.set(url, { client: view, until: o.now() + lifetime });
        while (cache.size > cacheEntries) cache.delete(cache.keys().next().value as string);
      }
      return { ok: true, client: view };
    },
  };
}
