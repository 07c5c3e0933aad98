import type { IncomingMessage, ServerResponse } from 'node:http';
import { toUsd } from '@farebox/protocol';
import { DiscoveryError, rankByHealth, type SearchHit } from '@farebox/discovery';
import type { RegistryAgent } from '@farebox/stellar';
import { bazaarHandler } from './bazaar.js';
import type { HealthFeed } from './health-feed.js';
import type { DiscoveryService } from './service.js';

export interface DiscoveryHttpOptions {
  /** Requests per minute and client IP (`/health` not counted); 0 turns the limit off. Default 600. */
  rateLimitPerMinute?: number;
  /** Take the client IP from the last `X-Forwarded-For` entry (one proxy hop in front). Default false. */
  trustProxy?: boolean;
  /** Clock for the rate-limit windows (tests). */
  now?: () => number;
  /** The platform treasury (`FAREBOX_TREASURY_ADDRESS`): `payTo` of the `exact` offers in the x402 bazaar listing. */
  treasury?: string;
  /** The services' health from the gateway's feed (`FAREBOX_HEALTH_FEED_URL`): shown on every service, weighing search. */
  health?: HealthFeed;
}

/** Search results per request: 1 to 100, default 10. */
export const SEARCH_LIMIT = { min: 1, max: 100, default: 10 } as const;
/** Catalog page size: 1 to 1000, default 100. */
export const PAGE_LIMIT = { min: 1, max: 1000, default: 100 } as const;
export const MAX_QUERY_LENGTH = 512;
export const MAX_SERVICE_NAME = 32;

/** A registry entry as discovery serves it (the gateway's field names; base units as a decimal string, exact). */
export function agentView(a: RegistryAgent) {
  return {
    service: a.service,
    pricePerCall: toUsd(a.pricePerCall),
    pricePerCallBaseUnits: a.pricePerCall.toString(),
    description: a.description,
    endpoint: a.endpoint,
    ownerWallet: a.owner,
    acceptedToken: 'USDC',
    createdAt: a.createdAt,
  };
}
export type AgentView = ReturnType<typeof agentView>;

function hitView(h: SearchHit, agent: RegistryAgent) {
  return { service: h.id, score: h.score, bm25: h.bm25, cosine: h.cosine, agent: agentView(agent) };
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

const bad = (message: string) => new HttpError(400, message);

/** The query parameters, refusing unknown and repeated ones. */
function params(url: URL, allowed: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const [key, value] of url.searchParams) {
    if (!allowed.includes(key)) throw bad(`unknown parameter: ${key}`);
    if (out.has(key)) throw bad(`parameter given more than once: ${key}`);
    out.set(key, value);
  }
  return out;
}

function intParam(value: string | undefined, name: string, range: { min: number; max: number; default: number }): number {
  if (value === undefined) return range.default;
  const n = /^\d{1,7}$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < range.min || n > range.max) throw bad(`invalid ${name} (must be an integer from ${range.min} to ${range.max})`);
  return n;
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'access-control-allow-origin': '*',
    ...headers,
  });
  res.end(res.req.method === 'HEAD' ? undefined : text);
}

/** Fixed one-minute windows per IP, in memory (each replica counts its own). */
class RateLimiter {
  private windows = new Map<string, { start: number; count: number }>();
  constructor(
    private readonly perMinute: number,
    private readonly now: () => number,
  ) {}
  /** Seconds to wait, or 0 when the request may pass. */
  take(ip: string): number {
    const now = this.now();
    let w = this.windows.get(ip);
    if (!w || now - w.start >= 60_000) {
      if (this.windows.size > 100_000) this.sweep(now);
      w = { start: now, count: 0 };
      this.windows.set(ip, w);
    }
    if (w.count >= this.perMinute) return Math.max(1, Math.ceil((w.start + 60_000 - now) / 1000));
    w.count++;
    return 0;
  }
  private sweep(now: number) {
    for (const [ip, w] of this.windows) if (now - w.start >= 60_000) this.windows.delete(ip);
  }
}

function clientIp(req: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = req.headers['x-forwarded-for'];
    const list = (Array.isArray(forwarded) ? forwarded.join(',') : (forwarded ?? ''))
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const last = list.at(-1);
    if (last) return last;
  }
  return req.socket.remoteAddress ?? 'unknown';
}

/**
 * The discovery HTTP API (docs/api.md, "Discovery backend"): `GET /search`,
 * `GET /agents`, `GET /agents/:service`, `GET /health`, and the x402 bazaar's
 * `GET /discovery/resources` and `GET /discovery/search`. No credential; CORS
 * open to every origin (read-only, no cookies); per-IP rate limit.
 */
export function createDiscoveryHandler(service: DiscoveryService, options: DiscoveryHttpOptions = {}) {
  const perMinute = options.rateLimitPerMinute ?? 600;
  const limiter = perMinute > 0 ? new RateLimiter(perMinute, options.now ?? Date.now) : undefined;
  const trustProxy = options.trustProxy ?? false;
  const bazaar = bazaarHandler(service, options.treasury, options.health);
  const health = options.health;
  // With a feed, every service carries its health (docs/api.md, "Service health").
  const view = (a: RegistryAgent) => (health ? { ...agentView(a), health: health.of(a.service) } : agentView(a));

  async function route(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const path = url.pathname;
    if (path === '/health') {
      params(url, []);
      const h = await service.health();
      return send(res, h.ready ? 200 : 503, h);
    }
    if (limiter) {
      const wait = limiter.take(clientIp(req, trustProxy));
      if (wait > 0) throw new HttpError(429, `rate limit exceeded (${perMinute} requests per minute)`, { 'retry-after': String(wait) });
    }
    if (path === '/discovery/resources') return send(res, 200, bazaar.list(url.searchParams));
    if (path === '/discovery/search') return send(res, 200, await bazaar.search(url.searchParams));
    if (path === '/search') {
      const p = params(url, ['q', 'limit']);
      const q = p.get('q');
      if (q === undefined || q.trim() === '') throw bad('q required');
      if (q.length > MAX_QUERY_LENGTH) throw bad(`query too long (max ${MAX_QUERY_LENGTH})`);
      const limit = intParam(p.get('limit'), 'limit', SEARCH_LIMIT);
      const { mode, hits } = await service.searchWithMode(q, limit);
      const found = hits.flatMap((h) => {
        const agent = service.get(h.id) ?? (h.meta as RegistryAgent | undefined);
        return agent ? [{ ...hitView(h, agent), agent: view(agent) }] : [];
      });
      // Relevance weighed by health, as the gateway's search (docs/search.md, "Health").
      const results = health ? rankByHealth(found, (r) => health.ranking(r.service)) : found;
      // The ranking that served this search (not the index's state a moment later).
      return send(res, 200, { query: q, mode: mode === 'hybrid' ? 'hybrid' : 'keyword-only', search_mode: mode, results });
    }
    if (path === '/agents') {
      const p = params(url, ['limit', 'after']);
      const limit = intParam(p.get('limit'), 'limit', PAGE_LIMIT);
      const after = p.get('after');
      const all = service.list();
      let start = 0;
      if (after !== undefined) {
        // First entry after `after` in the listing's order (a binary search; `after` need not exist any more).
        let lo = 0;
        let hi = all.length;
        while (lo < hi) {
          const mid = (lo + hi) >> 1;
          if (all[mid]!.service.localeCompare(after) <= 0) lo = mid + 1;
          else hi = mid;
        }
        start = lo;
      }
      const page = all.slice(start, start + limit);
      const more = start + limit < all.length;
      return send(res, 200, { agents: page.map(view), total: all.length, next: more ? page.at(-1)!.service : null });
    }
    if (path.startsWith('/agents/')) {
      params(url, []);
      let name: string;
      try {
        name = decodeURIComponent(path.slice('/agents/'.length));
      } catch {
        throw bad('invalid service name (bad percent-encoding)');
      }
      if (name === '' || name.includes('/')) throw new HttpError(404, 'not found');
      if (name.length > MAX_SERVICE_NAME) throw bad(`service name too long (max ${MAX_SERVICE_NAME})`);
      const agent = service.get(name);
      if (!agent) throw new HttpError(404, 'service not found');
      return send(res, 200, view(agent));
    }
    throw new HttpError(404, 'not found');
  }

  return (req: IncomingMessage, res: ServerResponse): void => {
    const method = req.method ?? 'GET';
    if (method === 'OPTIONS') {
      res.writeHead(204, {
        'access-control-allow-origin': '*',
        'access-control-allow-methods': 'GET, HEAD, OPTIONS',
        'access-control-allow-headers': 'content-type',
        'access-control-max-age': '86400',
      });
      res.end();
      return;
    }
    const fail = (err: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (err instanceof HttpError) return send(res, err.status, { error: err.message }, err.headers);
      if (err instanceof DiscoveryError && err.code === 'INVALID_QUERY') return send(res, 400, { error: err.message });
      send(res, 500, { error: err instanceof Error ? err.message : String(err) });
    };
    if (method !== 'GET' && method !== 'HEAD') {
      fail(new HttpError(405, 'method not allowed', { allow: 'GET, HEAD, OPTIONS' }));
      return;
    }
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://discovery.invalid');
    } catch {
      fail(bad('invalid request target'));
      return;
    }
    route(req, res, url).catch(fail);
  };
}
