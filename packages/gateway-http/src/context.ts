import { parse as parseQuery, type ParsedUrlQuery } from 'node:querystring';
import proxyAddr from 'proxy-addr';
import type { Principal } from '@farebox/gateway-core';
import type { HttpRequest, Reply } from './http.js';

/** One request while the handler serves it: what a route reads and where it writes its answer. */
export interface RequestContext {
  readonly req: HttpRequest;
  readonly reply: Reply;
  /** The path without the query, as sent (not decoded). */
  readonly path: string;
  readonly requestId: string;
  /** The matched route's parameters, decoded. */
  params: Record<string, string>;
  /** The query as `name -> value` (a repeated name: its values in an array), as node:querystring reads it. */
  query(): ParsedUrlQuery;
  /** The query as the URL has it. */
  searchParams(): URLSearchParams;
  /** The client's address: the peer's, or the first untrusted one of `X-Forwarded-For` behind trusted proxies. */
  ip(): string;
  /** True when the client reached the gateway over TLS (the connection's, or a trusted proxy's `X-Forwarded-Proto`). */
  secure(): boolean;
  /** The parsed body (JSON or form), once a reader took it. */
  body: unknown;
  /** Who sent it, once authenticated (for the access log too). */
  principal: Principal | undefined;
  /** The rate-limit rule that refused it, if one did (the access log and `farebox_rate_limited_total`). */
  rateLimitRule: string | undefined;
}

export type RouteHandler = (ctx: RequestContext) => Promise<void> | void;

/** `trust proxy` as express reads it: true, a hop count, a list of addresses and subnets (or names: loopback, linklocal, uniquelocal), or none. */
export function compileTrust(value: boolean | number | string): (addr: string, i: number) => boolean {
  if (value === true) return () => true;
  if (typeof value === 'number') return (_addr, i) => i < value;
  if (typeof value === 'string')
    return proxyAddr.compile(
      value
        .split(',')
        .map((v) => v.trim())
        .filter(Boolean),
    );
  return proxyAddr.compile([]);
}

export function createContext(req: HttpRequest, reply: Reply, requestId: string, trust: (addr: string, i: number) => boolean): RequestContext {
  const q = req.url.indexOf('?');
  const path = q === -1 ? req.url : req.url.slice(0, q);
  const search = q === -1 ? '' : req.url.slice(q + 1);
  let query: ParsedUrlQuery | undefined;
  let ip: string | undefined;
  // proxy-addr reads the peer's address from the socket and the forwarded chain from the headers.
  const peer = () => ({ headers: req.headers, socket: { remoteAddress: req.remoteAddress } }) as unknown as Parameters<typeof proxyAddr>[0];
  return {
    req,
    reply,
    path,
    requestId,
    params: {},
    query: () => (query ??= parseQuery(search)),
    searchParams: () => new URLSearchParams(search),
    ip: () => (ip ??= req.remoteAddress === undefined ? 'unknown' : proxyAddr(peer(), trust)),
    secure() {
      if (req.encrypted) return true;
      if (req.remoteAddress === undefined || !trust(req.remoteAddress, 0)) return false;
      const proto = req.headers['x-forwarded-proto'];
      if (typeof proto !== 'string') return false;
      return proto.split(',')[0]!.trim().toLowerCase() === 'https';
    },
    body: undefined,
    principal: undefined,
    rateLimitRule: undefined,
  };
}
