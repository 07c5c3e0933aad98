import { createHash, randomBytes } from 'node:crypto';
import type { TestUser } from './harness.js';

const unescapeHtml = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

export interface ConsentResult {
  /** Where the browser was sent: the client's redirect URI with code (or error), state and iss. */
  redirect: URL;
  /** The consent page's HTML and headers. */
  page: { status: number; html: string; headers: Headers };
}

/**
 * Plays the browser: opens the authorize URL with the user's session cookie,
 * reads the consent form and posts it (Allow or Deny) with the CSRF token it
 * carries, and returns the redirect back to the client. The connection's
 * spending policy: `dailyLimitUsd` is a limit per day (empty: none); the other
 * policy fields (`limit_usd`, `limit_period`, `allowed_services`,
 * `max_call_usd`) go in `fields`, which override the rest.
 */
export async function consent(
  base: string,
  authorizeUrl: string | URL,
  user: TestUser,
  opts: { decision?: 'allow' | 'deny'; dailyLimitUsd?: string; fields?: Record<string, string> } = {},
): Promise<ConsentResult> {
  const res = await fetch(authorizeUrl, { headers: { cookie: user.cookie }, redirect: 'manual' });
  const html = await res.text();
  const page = { status: res.status, html, headers: res.headers };
  if (res.status === 302) return { redirect: new URL(res.headers.get('location')!), page };
  if (res.status !== 200) throw new Error(`authorize page answered ${res.status}: ${html.slice(0, 300)}`);
  const fields: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[unescapeHtml(m[1]!)] = unescapeHtml(m[2]!);
  fields.decision = opts.decision ?? 'allow';
  fields.limit_usd = opts.dailyLimitUsd ?? '';
  fields.limit_period = 'day';
  Object.assign(fields, opts.fields);
  const post = await fetch(`${base}/authorize`, {
    method: 'POST',
    headers: { cookie: user.cookie, 'content-type': 'application/x-www-form-urlencoded', origin: base },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  });
  if (post.status !== 303) throw new Error(`consent post answered ${post.status}: ${(await post.text()).slice(0, 300)}`);
  return { redirect: new URL(post.headers.get('location')!), page };
}

export function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** A registered public client plus helpers for the raw protocol (no library). */
export async function rawClient(base: string, metadata: Record<string, unknown> = {}) {
  const redirectUri = 'http://127.0.0.1:41999/callback';
  const reg = await fetch(`${base}/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Raw test client', redirect_uris: [redirectUri], token_endpoint_auth_method: 'none', ...metadata }),
  });
  const client = (await reg.json()) as { client_id: string; client_secret?: string; redirect_uris: string[] };
  if (reg.status !== 201) throw new Error(`register failed: ${JSON.stringify(client)}`);

  function authorizeUrl(params: Record<string, string | undefined> = {}) {
    const u = new URL(`${base}/authorize`);
    const all: Record<string, string | undefined> = {
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: redirectUri,
      state: 'st-123',
      resource: `${base}/mcp`,
      ...params,
    };
    for (const [k, v] of Object.entries(all)) if (v !== undefined) u.searchParams.set(k, v);
    return u;
  }

  async function token(params: Record<string, string>, headers: Record<string, string> = {}) {
    const res = await fetch(`${base}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams({ client_id: client.client_id, ...params }).toString(),
    });
    return { status: res.status, body: (await res.json()) as Record<string, any>, headers: res.headers };
  }

  /** Consent (with an optional daily limit, or any policy in `fields`) and exchange the code: a fresh token pair. */
  async function authorize(user: TestUser, opts: { dailyLimitUsd?: string; scope?: string; fields?: Record<string, string> } = {}) {
    const p = pkce();
    const { redirect } = await consent(
      base,
      authorizeUrl({ code_challenge: p.challenge, code_challenge_method: 'S256', ...(opts.scope ? { scope: opts.scope } : {}) }),
      user,
      opts,
    );
    const code = redirect.searchParams.get('code');
    if (!code) throw new Error(`no code: ${redirect}`);
    const t = await token({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: p.verifier });
    if (t.status !== 200) throw new Error(`token failed: ${JSON.stringify(t.body)}`);
    return { code, verifier: p.verifier, tokens: t.body as { access_token: string; refresh_token: string; expires_in: number; scope: string } };
  }

  return { client, redirectUri, authorizeUrl, token, authorize };
}

/** Consent fields that ask the person about no call (none by price, none as the limit runs low): for tests about the limit alone. */
export const NO_CONFIRMATIONS = { confirm_above_usd: '', confirm_below_left_percent: '0' } as const;
