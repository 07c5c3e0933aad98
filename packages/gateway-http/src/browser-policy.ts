import { GatewayError, safeEqual, type GatewayConfig, type Principal } from '@farebox/gateway-core';
import type { HttpRequest } from './http.js';

/** What the policy reads of a request: its headers, and for the CSRF form field its parsed body (`parsed`). */
type Req = Pick<HttpRequest, 'headers'> & { parsed?: unknown };

/**
 * The one policy for browser (cookie) requests and the OAuth endpoints:
 * which Host they may name, which Origin may send them, which CSRF token a
 * session's write must carry, and where a redirect built from user input may
 * lead. Bearer-token calls carry no ambient credential and are not subject to
 * it; {@link bearerToken} is the one reading of their header.
 */
export interface BrowserPolicy {
  /** Refuses (403) a request whose Host is not the public host or one of `FAREBOX_ALLOWED_HOSTS` (DNS rebinding). */
  checkHost(req: Req): void;
  /** Refuses (403) a cross-origin or opaque (`Origin: null`, sandboxed frames) request; no Origin is a non-browser client. */
  checkOrigin(req: Req): void;
  /** Host, then Origin: every request that sets, ends or uses a session cookie. */
  checkBrowser(req: Req): void;
  /**
   * Refuses (403 `CSRF`) a session's write without the session's CSRF token,
   * sent in `X-CSRF-Token` (scripts) or the `_csrf` form field (forms).
   */
  checkCsrf(req: Req, principal: Principal): void;
  /** A same-origin path for `target`, else `/` (parsed with the URL parser against the gateway's own origin). */
  safeRedirect(target: unknown): string;
}

/**
 * The bearer token of `Authorization`: `undefined` without the header, `null`
 * when the header is not a single Bearer token (refused as an invalid
 * credential), else the token.
 */
export function bearerToken(req: Pick<HttpRequest, 'headers'>): string | null | undefined {
  const auth = req.headers.authorization;
  if (auth === undefined) return undefined;
  if (typeof auth !== 'string') return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
  return m ? m[1]! : null;
}

export function browserPolicy(config: Pick<GatewayConfig, 'publicOrigin' | 'allowedHosts'>): BrowserPolicy {
  const publicUrl = new URL(config.publicOrigin);
  const scheme = publicUrl.protocol;
  // `host:443` is `host` to an https origin (`:80` to an http one): browsers never send the default port.
  const defaultPort = scheme === 'https:' ? ':443' : ':80';
  const canonical = (host: string) => {
    const h = host.toLowerCase();
    return h.endsWith(defaultPort) ? h.slice(0, -defaultPort.length) : h;
  };
  const hosts = new Set([publicUrl.host, ...config.allowedHosts].map(canonical));
  // Only the public origin and the allowed hosts under the public origin's scheme: never `http://{Host}`.
  const origins = new Set([config.publicOrigin, ...[...hosts].map((h) => `${scheme}//${h}`)]);
  const checkHost = (req: Req) => {
    const host = canonical(typeof req.headers.host === 'string' ? req.headers.host : '');
    // The message names the public host only (other allowed names may be internal).
    if (!hosts.has(host))
      throw new GatewayError(
        'FORBIDDEN',
        `unknown host ${JSON.stringify(host.slice(0, 100))}: this gateway answers for ${publicUrl.host} (FAREBOX_BASE_URL, FAREBOX_ALLOWED_HOSTS)`,
      );
  };
  // `Origin: null` (sandboxed frames, some redirects) is never ours; no Origin at all is a non-browser client.
  const checkOrigin = (req: Req) => {
    const origin = req.headers.origin;
    if (origin !== undefined && (typeof origin !== 'string' || !origins.has(origin))) throw new GatewayError('CSRF', 'cross-origin request refused');
  };
  return {
    checkHost,
    checkOrigin,
    checkBrowser(req) {
      checkHost(req);
      checkOrigin(req);
    },
    checkCsrf(req, principal) {
      const header = req.headers['x-csrf-token'];
      const field = (req.parsed as Record<string, unknown> | undefined)?._csrf;
      const sent = header ?? (typeof field === 'string' ? field : undefined);
      if (typeof sent !== 'string' || !principal.csrfToken || !safeEqual(sent, principal.csrfToken)) {
        throw new GatewayError('CSRF', 'missing or invalid CSRF token');
      }
    },
    safeRedirect(target) {
      if (typeof target !== 'string' || !target.startsWith('/')) return '/';
      let url: URL;
      try {
        url = new URL(target, config.publicOrigin);
      } catch {
        return '/';
      }
      if (url.origin !== config.publicOrigin) return '/';
      const path = `${url.pathname}${url.search}${url.hash}`;
      // `//host` or `/\host` would leave the site once the browser reads the Location.
      if (!path.startsWith('/') || path.startsWith('//') || path.startsWith('/\\')) return '/';
      return path;
    },
  };
}
