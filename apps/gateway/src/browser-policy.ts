import type { Request } from 'express';
import { GatewayError, type GatewayConfig } from '@farebox/gateway-core';

/**
 * The one policy for browser (cookie) requests and the OAuth endpoints:
 * which Host they may name, which Origin may send them, and where a redirect
 * built from user input may lead. Bearer-token API calls carry no ambient
 * credential and are not subject to it.
 */
export interface BrowserPolicy {
  /** Refuses (403) a request whose Host is not the public host or one of `FAREBOX_ALLOWED_HOSTS` (DNS rebinding). */
  checkHost(req: Request): void;
  /** Refuses (403) a cross-origin or opaque (`Origin: null`, sandboxed frames) request; no Origin is a non-browser client. */
  checkOrigin(req: Request): void;
  /** A same-origin path for `target`, else `/` (parsed with the URL parser against the gateway's own origin). */
  safeRedirect(target: unknown): string;
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
  return {
    checkHost(req) {
      const host = canonical(req.headers.host ?? '');
      // The message names the public host only (other allowed names may be internal).
      if (!hosts.has(host)) throw new GatewayError('FORBIDDEN', `unknown host ${JSON.stringify(host.slice(0, 100))}: this gateway answers for ${publicUrl.host} (FAREBOX_BASE_URL, FAREBOX_ALLOWED_HOSTS)`);
    },
    checkOrigin(req) {
      const origin = req.headers.origin;
      if (origin !== undefined && !origins.has(origin)) throw new GatewayError('CSRF', 'cross-origin request refused');
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
