/** Redirect URI rules: https anywhere, or plain http on a loopback host (RFC 8252 7.3). */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** Returns why `uri` may not be registered as a redirect URI, or undefined when it may. */
export function redirectUriProblem(uri: string): string | undefined {
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return `redirect URI is not an absolute URL: ${uri}`;
  }
  if (u.hash || uri.includes('#')) return `redirect URI must not have a fragment: ${uri}`;
  if (u.username || u.password) return `redirect URI must not carry credentials: ${uri}`;
  if (u.protocol === 'https:') return undefined;
  if (u.protocol === 'http:' && LOOPBACK_HOSTS.has(u.hostname)) return undefined;
  return `redirect URI must use https, or http on a loopback address (127.0.0.1, localhost, [::1]): ${uri}`;
}

/**
 * Exact matching (RFC 9700 2.1): the presented URI must equal a registered one,
 * except that a loopback URI may use any port (RFC 8252 7.3).
 */
export function matchRedirectUri(registered: readonly string[], presented: string): boolean {
  if (registered.includes(presented)) return true;
  let p: URL;
  try {
    p = new URL(presented);
  } catch {
    return false;
  }
  if (p.protocol !== 'http:' || !LOOPBACK_HOSTS.has(p.hostname) || p.hash || p.username || p.password) return false;
  return registered.some((r) => {
    let u: URL;
    try {
      u = new URL(r);
    } catch {
      return false;
    }
    if (u.protocol !== 'http:' || u.hostname !== p.hostname) return false;
    // Compare everything but the port, textually.
    const withoutPort = (x: URL, raw: string) => raw.replace(`${x.protocol}//${x.host}`, `${x.protocol}//${x.hostname}`);
    return withoutPort(u, r) === withoutPort(p, presented);
  });
}
