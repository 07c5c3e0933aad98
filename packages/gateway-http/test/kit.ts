import { createLogger, type LogLevel } from '@farebox/gateway-core';
import { startCoreStack, type CoreStack, type CoreStackOptions } from '@farebox/gateway-core/testing';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jsonRequest, type JsonAnswer, type JsonRequestInit } from '@farebox/test-kit';
import { createGatewayHandler, fetchAdapter, toNodeListener, type GatewayHandler } from '../src/index.js';

/**
 * The handler over gateway-core's in-process stack (`@farebox/gateway-core/testing`:
 * PGlite in memory, the devnet and provider-SDK services on loopback ports, a
 * test clock), called in this process through {@link fetchAdapter}: no
 * gateway socket, no host.
 */
export interface HttpStack extends CoreStack {
  handler: GatewayHandler;
  /** The gateway's public origin (what `Host` and `Origin` must name). */
  origin: string;
  /** `fetch` to the handler; a path is taken under `origin`. Redirects are not followed. */
  fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>;
  /** A JSON request: the body as JSON (or text), the answer's status, JSON body (or text) and headers. */
  request(path: string, init?: RequestOptions): Promise<Answer>;
  /** A new account signed up through `/auth/signup`, with an API key made through `/v1/api-keys` by its session; `topup`: USD of credits it buys through `/v1/topup` (1,000 at most a top-up). */
  account(opts?: { topup?: number }): Promise<HttpAccount>;
  /**
   * An OAuth access token for the account: a new public client registered
   * through `/register`, allowed on the consent page as the account's browser
   * does (its session cookie, the page's hidden fields, no daily limit, and
   * `fields` over them), its code exchanged with PKCE.
   */
  accessToken(account: HttpAccount, opts?: { scope?: string; fields?: Record<string, string> }): Promise<string>;
  /** The handler on node:http (`toNodeListener`) on a loopback port, for a client that takes only a URL: that URL. Closed with the stack. */
  listen(): Promise<string>;
  /** Every line the gateway logged so far (JSON), at `logLevel` and above; none without it. */
  logs(): readonly string[];
}

/** Options of {@link startHttpStack}; its gateway allows 1000 sign-ins and OAuth requests a minute from one address (`rateLimits` in `gateway` overrides it). */
export interface HttpStackOptions extends CoreStackOptions {
  /** Keep the gateway's log (the access log and background warnings among it) from this level up, for `logs()`; a logger in `gateway` wins. */
  logLevel?: LogLevel;
}

export type RequestOptions = JsonRequestInit;
export type Answer = JsonAnswer;

export interface HttpAccount {
  id: string;
  email: string;
  key: string;
  /** Its custodial wallet (`GET /v1/me`). */
  wallet: string;
  /** The session and CSRF cookies, as a browser sends them. */
  cookie: string;
  csrf: string;
  /** A request with the account's API key. */
  api(path: string, init?: RequestOptions): Promise<Answer>;
}

let counter = 0;

export async function startHttpStack({ logLevel, ...options }: HttpStackOptions = {}): Promise<HttpStack> {
  const lines: string[] = [];
  const logger = logLevel ? createLogger({ level: logLevel, destination: { write: (line: string) => void lines.push(line) } }) : undefined;
  const stack = await startCoreStack({
    ...options,
    gateway: { rateLimits: { authPerMinute: 1000 }, ...(logger ? { logger, log: undefined } : {}), ...options.gateway },
  });
  const handler = createGatewayHandler(stack.core);
  const origin = stack.core.config.publicOrigin;
  const local = fetchAdapter(handler, { origin });

  const request = (path: string, init: RequestOptions = {}): Promise<Answer> => jsonRequest(local, path, init);

  const servers: Server[] = [];

  return {
    ...stack,
    async listen() {
      const server = createServer(toNodeListener(handler));
      servers.push(server);
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    },
    async close() {
      for (const server of servers) await new Promise((r) => server.close(r));
      await stack.close();
    },
    handler,
    origin,
    fetch: local,
    request,
    logs: () => lines,
    async accessToken(account, opts = {}) {
      const redirectUri = 'http://127.0.0.1:41999/callback';
      const reg = await request('/register', {
        body: { client_name: 'Raw test client', redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' },
      });
      if (reg.status !== 201) throw new Error(`register failed: ${JSON.stringify(reg.body)}`);
      const verifier = randomBytes(32).toString('base64url');
      const authorize = new URLSearchParams({
        response_type: 'code',
        client_id: reg.body.client_id,
        redirect_uri: redirectUri,
        state: 'st-123',
        resource: `${origin}/mcp`,
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
        ...(opts.scope ? { scope: opts.scope } : {}),
      });
      const page = await local(`/authorize?${authorize}`, { headers: { cookie: account.cookie } });
      const html = await page.text();
      if (page.status !== 200) throw new Error(`authorize page answered ${page.status}: ${html.slice(0, 300)}`);
      const unescapeHtml = (v: string) =>
        v
          .replace(/&quot;/g, '"')
          .replace(/&#39;/g, "'")
          .replace(/&lt;/g, '<')
          .replace(/&gt;/g, '>')
          .replace(/&amp;/g, '&');
      const fields: Record<string, string> = {};
      for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[unescapeHtml(m[1]!)] = unescapeHtml(m[2]!);
      Object.assign(fields, { decision: 'allow', limit_usd: '', limit_period: 'day' }, opts.fields);
      const allowed = await local('/authorize', {
        method: 'POST',
        headers: { cookie: account.cookie, 'content-type': 'application/x-www-form-urlencoded', origin },
        body: new URLSearchParams(fields).toString(),
      });
      const code = new URL(allowed.headers.get('location') ?? '', origin).searchParams.get('code');
      if (allowed.status !== 303 || !code) throw new Error(`consent answered ${allowed.status}: ${allowed.headers.get('location')}`);
      const form = { grant_type: 'authorization_code', client_id: reg.body.client_id, code, redirect_uri: redirectUri, code_verifier: verifier };
      const token = await local('/token', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form).toString(),
      });
      const tokens = (await token.json()) as { access_token: string };
      if (token.status !== 200) throw new Error(`token failed: ${JSON.stringify(tokens)}`);
      return tokens.access_token;
    },
    async account(opts = {}) {
      const email = `http${process.pid}_${counter++}@example.com`;
      const signup = await request('/auth/signup', { body: { email, password: 'correct horse battery' } });
      if (signup.status !== 201) throw new Error(`signup failed: ${signup.status} ${JSON.stringify(signup.body)}`);
      const cookie = signup.headers
        .getSetCookie()
        .map((c) => c.split(';')[0])
        .join('; ');
      const csrf = signup.body.csrf_token as string;
      const created = await request('/v1/api-keys', { body: { name: 'test' }, headers: { cookie, 'x-csrf-token': csrf } });
      if (created.status !== 201) throw new Error(`key creation failed: ${created.status} ${JSON.stringify(created.body)}`);
      const key = created.body.key as string;
      const api: HttpAccount['api'] = (path, init = {}) => request(path, { ...init, headers: { authorization: `Bearer ${key}`, ...init.headers } });
      for (let left = opts.topup ?? 0; left > 0; left -= 1000) {
        const t = await api('/v1/topup', { body: { amount: Math.min(1000, left) } });
        if (t.status !== 200) throw new Error(`topup failed: ${t.status} ${JSON.stringify(t.body)}`);
      }
      const me = await api('/v1/me');
      return { id: signup.body.id as string, email, key, wallet: me.body.custodial_wallet as string, cookie, csrf, api };
    },
  };
}
