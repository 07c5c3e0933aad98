/**
 * The gateway's HTTP surface speaks these two records, whatever carries
 * them: a host adapts its transport to {@link HttpRequest} and writes the
 * {@link HttpResponse} back (`toNodeListener` in node.ts for node:http and
 * express; a test calls the handler with them directly).
 */

/** Request headers with lower-case names, as node:http gives them (a repeated header other than `set-cookie` joined with ", "). */
export type HttpHeaders = Readonly<Record<string, string | string[] | undefined>>;

export interface HttpRequest {
  method: string;
  /** The path and query as sent (`/v1/agents?limit=5`). */
  url: string;
  headers: HttpHeaders;
  /**
   * The body as its bytes arrive (node:http's request is one), or all of
   * it, or none. Read at most once, by the route that takes it; what a route
   * leaves unread the host reads off before it answers.
   */
  body?: AsyncIterable<Uint8Array> | Uint8Array | undefined;
  /** The address of the peer that sent it (the socket's; a proxy's when behind one). */
  remoteAddress?: string | undefined;
  /** True when the connection itself is TLS. */
  encrypted?: boolean | undefined;
}

export interface HttpResponse {
  status: number;
  /** Header names in lower case; `set-cookie` may repeat. */
  headers: Record<string, string | string[]>;
  /** Text (UTF-8), bytes, a stream (an SSE answer of `/mcp`), or nothing. */
  body?: string | Uint8Array | ReadableStream<Uint8Array> | undefined;
}

/** The answer built while a request is served: headers set along the way (request id, security headers, CORS) survive an error. */
export class Reply {
  status = 200;
  readonly headers: Record<string, string | string[]> = {};
  body: HttpResponse['body'];

  set(name: string, value: string | number): this {
    this.headers[name.toLowerCase()] = String(value);
    return this;
  }

  get(name: string): string | undefined {
    const v = this.headers[name.toLowerCase()];
    return Array.isArray(v) ? v.join(', ') : v;
  }

  /** Adds one `Set-Cookie` line. */
  cookie(name: string, value: string, options: CookieOptions): this {
    const prev = this.headers['set-cookie'];
    const line = serializeCookie(name, value, options);
    this.headers['set-cookie'] = prev === undefined ? [line] : [...(Array.isArray(prev) ? prev : [prev]), line];
    return this;
  }

  /** Ends a cookie (an empty value that expired at the epoch, with the same path and flags). */
  clearCookie(name: string, options: CookieOptions): this {
    return this.cookie(name, '', { ...options, expires: new Date(0) });
  }

  /** A JSON answer (`bigint` values as decimal strings). */
  json(status: number, value: unknown): this {
    return this.text(status, JSON.stringify(value, bigintAsString) ?? 'null', 'application/json; charset=utf-8');
  }

  /** An answer of text of a type (UTF-8). */
  text(status: number, text: string, type: string): this {
    this.status = status;
    this.set('content-type', type);
    this.body = text;
    return this;
  }

  html(status: number, html: string): this {
    return this.text(status, html, 'text/html; charset=utf-8');
  }

  /** A redirect to `location` (a path of this origin or an absolute URL). */
  redirect(status: 302 | 303, location: string): this {
    this.set('location', location);
    return this.text(status, `Redirecting to ${location}`, 'text/plain; charset=utf-8');
  }

  /** An answer with no body (204, or a 200 to an OPTIONS request). */
  empty(status: number): this {
    this.status = status;
    this.body = undefined;
    return this;
  }

  toResponse(): HttpResponse {
    return { status: this.status, headers: this.headers, body: this.body };
  }
}

const bigintAsString = (_k: string, v: unknown) => (typeof v === 'bigint' ? v.toString() : v);

export interface CookieOptions {
  httpOnly: boolean;
  sameSite: 'lax' | 'strict';
  secure: boolean;
  path: string;
  expires?: Date;
}

/** One `Set-Cookie` value (RFC 6265 4.1): the value percent-encoded, attributes in the order browsers and express write them. */
export function serializeCookie(name: string, value: string, o: CookieOptions): string {
  let line = `${name}=${encodeURIComponent(value)}; Path=${o.path}`;
  if (o.expires) line += `; Expires=${o.expires.toUTCString()}`;
  if (o.httpOnly) line += '; HttpOnly';
  if (o.secure) line += '; Secure';
  line += o.sameSite === 'strict' ? '; SameSite=Strict' : '; SameSite=Lax';
  return line;
}

/** Parses the Cookie header (RFC 6265 pairs; the first of a repeated name wins). */
export function readCookies(header: string | string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof header !== 'string') return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    if (!name || name in out) continue;
    const raw = part
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1');
    try {
      out[name] = decodeURIComponent(raw);
    } catch {
      out[name] = raw;
    }
  }
  return out;
}

/** A request header sent once, as a string (a repeated header is an array and is ignored). */
export function stringHeader(req: Pick<HttpRequest, 'headers'>, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === 'string' ? v : undefined;
}
