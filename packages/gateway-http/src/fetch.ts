import type { GatewayHandler } from './handler.js';
import type { HttpRequest, HttpResponse } from './http.js';

export interface FetchAdapterOptions {
  /** The origin requests are addressed to when given a path (and the `Host` they carry unless they set one). */
  origin: string;
  /** The client's address as the handler sees it (default 127.0.0.1). */
  remoteAddress?: string;
}

/** A web `Request` as the handler's record (its body read whole). */
export async function fromWebRequest(request: Request, remoteAddress = '127.0.0.1'): Promise<HttpRequest> {
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => {
    headers[name] = value;
  });
  headers.host ??= new URL(request.url).host;
  const url = new URL(request.url);
  let body: Uint8Array | undefined;
  if (request.body !== null) {
    body = new Uint8Array(await request.arrayBuffer());
    headers['content-length'] = String(body.byteLength);
  }
  return { method: request.method, url: `${url.pathname}${url.search}`, headers, body, remoteAddress, encrypted: url.protocol === 'https:' };
}

/** The handler's answer as a web `Response`. */
export function toWebResponse(answer: HttpResponse): Response {
  const headers = new Headers();
  for (const [k, v] of Object.entries(answer.headers)) for (const value of Array.isArray(v) ? v : [v]) headers.append(k, value);
  const empty = answer.status === 204 || answer.status === 304 || answer.status < 200;
  return new Response(empty ? null : ((answer.body ?? null) as BodyInit | null), { status: answer.status, headers });
}

/**
 * The handler as a `fetch` function, in process (no socket): what a test or
 * an embedding host calls the way it would call the gateway over HTTP.
 * Redirects are not followed (the answer is the 302/303 itself).
 */
export function fetchAdapter(handler: GatewayHandler, options: FetchAdapterOptions): (input: string | URL | Request, init?: RequestInit) => Promise<Response> {
  return async (input, init) => {
    const request = new Request(typeof input === 'string' && input.startsWith('/') ? new URL(input, options.origin) : input, init);
    const answer = await handler(await fromWebRequest(request, options.remoteAddress));
    if ('unmatched' in answer) {
      answer.answered(404);
      return toWebResponse({
        ...answer,
        headers: { ...answer.headers, 'content-type': 'application/json; charset=utf-8' },
        body: '{"error":"not found","code":"NOT_FOUND"}',
      });
    }
    return toWebResponse(answer);
  };
}
