/**
 * The handler's route table: a method and a path template (`/v1/agents/:service`)
 * to a function. Paths match without regard to case and with or without one
 * trailing slash, parameters are one segment each, percent-decoded (a segment
 * that is no valid percent-encoding is the 400 `malformed percent-encoding in
 * the URL`), and a GET route answers HEAD too: the rules the gateway's
 * clients have relied on since it was served by express.
 */

export interface Route<T> {
  /** `GET`, `POST`, ..., or `*` for any method. */
  method: string;
  /** The template, as the access log and the metrics name the route. */
  path: string;
  handle: T;
}

interface Compiled<T> extends Route<T> {
  pattern: RegExp;
  names: string[];
}

export interface Match<T> {
  route: Route<T>;
  params: Record<string, string>;
}

export class Router<T> {
  private readonly routes: Compiled<T>[] = [];

  add(method: string, path: string, handle: T): this {
    const names: string[] = [];
    const source = path
      .split('/')
      .map((segment) => {
        if (segment.startsWith(':')) {
          names.push(segment.slice(1));
          return '([^/]+)';
        }
        return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      })
      .join('/');
    this.routes.push({ method: method.toUpperCase(), path, handle, names, pattern: new RegExp(`^${source}/?$`, 'i') });
    return this;
  }

  /**
   * The first route for `method` and `path` (the path without its query), or
   * `undefined`; `allowed` lists the methods other routes take on the path.
   */
  match(method: string, path: string): Match<T> | undefined {
    for (const r of this.routes) {
      if (r.method !== '*' && r.method !== method && !(method === 'HEAD' && r.method === 'GET')) continue;
      const m = r.pattern.exec(path);
      if (!m) continue;
      const params: Record<string, string> = {};
      for (let i = 0; i < r.names.length; i++) {
        try {
          params[r.names[i]!] = decodeURIComponent(m[i + 1]!);
        } catch {
          throw new URIError('malformed percent-encoding in the URL');
        }
      }
      return { route: r, params };
    }
    return undefined;
  }

  /** The methods some route takes on `path` (an OPTIONS answer's `Allow`). */
  methodsFor(path: string): string[] {
    const out = new Set<string>();
    for (const r of this.routes) if (r.method !== '*' && r.pattern.test(path)) out.add(r.method);
    if (out.has('GET')) out.add('HEAD');
    return [...out];
  }
}
