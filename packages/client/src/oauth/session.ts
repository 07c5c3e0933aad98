import { randomBytes, randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { auth, type OAuthClientProvider, type OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { OAuthClientError } from './errors.js';
import { withFileLock } from './lock.js';
import { createTokenStore, type StoredCredentials, type TokenStore } from './token-store.js';

export interface OAuthSessionOptions {
  /** The remote MCP server (the OAuth resource), `{gateway}/mcp`. */
  mcpUrl: string;
  tokenPath: string;
  /** Shown on the consent page. */
  clientName: string;
  /** Try to open the sign-in page in a browser (the URL is printed to stderr first either way). */
  openBrowser?: boolean;
  /** Where messages for the user go (default stderr: stdout carries the MCP protocol). */
  log?: (line: string) => void;
  /** How long to wait for the user to finish signing in (default 10 minutes). */
  signInTimeoutMs?: number;
  /** Refresh this long before the access token expires (default 60 s). */
  refreshMarginMs?: number;
  /** Lock timings (tests shorten them). */
  lock?: { timeoutMs?: number; pollMs?: number };
}

/** OAuth credentials of one gateway, shared by every process of the user through the token file. */
export interface OAuthSession {
  /**
   * A usable access token: the stored one, else a refreshed one, else a new
   * one from a browser sign-in. Pass the token the server just refused as
   * `rejected` to force a refresh (or a new sign-in if the refresh fails).
   */
  accessToken(options?: { rejected?: string }): Promise<string>;
  /** Forgets the stored credentials (next use signs in again). */
  signOut(): Promise<void>;
  readonly store: TokenStore;
}

/** Opens `url` in the user's browser, best effort: never throws, never waits. */
export function openBrowser(url: string): void {
  const [cmd, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '""', url.replace(/&/g, '^&')]]
        : ['xdg-open', [url]];
  try {
    const child = spawn(cmd, args, { stdio: 'ignore', detached: true, windowsHide: true });
    child.on('error', () => undefined);
    child.unref();
  } catch {
    // no opener on this machine: the URL is on stderr
  }
}

const page = (title: string, text: string) =>
  `<!doctype html><meta charset="utf-8"><title>${title}</title><body style="font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto"><h1>${title}</h1><p>${text}</p></body>`;

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A loopback listener on 127.0.0.1 with a free port that receives the authorization response at `/callback`. */
async function startCallback(
  expectedState: string,
): Promise<{ redirectUrl: string; code: Promise<{ code: string; iss: string | null }>; close(): Promise<void> }> {
  let settle!: { resolve: (v: { code: string; iss: string | null }) => void; reject: (e: Error) => void };
  const code = new Promise<{ code: string; iss: string | null }>((resolve, reject) => {
    settle = { resolve, reject };
  });
  code.catch(() => undefined);
  let done = false;
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== '/callback' || req.method !== 'GET') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const html = (status: number, body: string) => res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(body);
    if (done) return html(400, page('Already handled', 'This sign-in was already completed. You can close this tab.'));
    if (url.searchParams.get('state') !== expectedState)
      return html(400, page('Sign-in not recognised', 'This response does not belong to the sign-in in progress. Start again from your MCP client.'));
    done = true;
    const error = url.searchParams.get('error');
    if (error) {
      const description = url.searchParams.get('error_description');
      html(
        200,
        page('Not connected', `Farebox was not connected (${escapeHtml(error)}${description ? `: ${escapeHtml(description)}` : ''}). You can close this tab.`),
      );
      return settle.reject(new OAuthClientError('SIGN_IN', `sign-in refused: ${error}${description ? ` (${description})` : ''}`));
    }
    const value = url.searchParams.get('code');
    if (!value) {
      html(400, page('Sign-in failed', 'The response carries no authorization code.'));
      return settle.reject(new OAuthClientError('SIGN_IN', 'the authorization response carries no code'));
    }
    html(200, page('Connected to Farebox', 'You are signed in. You can close this tab and return to your assistant.'));
    settle.resolve({ code: value, iss: url.searchParams.get('iss') });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    redirectUrl: `http://127.0.0.1:${port}/callback`,
    code,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

/**
 * The MCP SDK's {@link OAuthClientProvider} over the token file: what the SDK
 * saves is written through at once (the caller holds the lock); the PKCE
 * verifier stays in memory, so a second process cannot overwrite it.
 */
class FileProvider implements OAuthClientProvider {
  verifier = '';
  authorizationUrl: URL | undefined;
  constructor(
    private state_: StoredCredentials,
    private readonly store: TokenStore,
    readonly redirectUrl: string,
    private readonly clientName: string,
    private readonly expectedState: string,
    private readonly onRedirect: (url: URL) => void,
  ) {}

  get credentials(): StoredCredentials {
    return this.state_;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.clientName,
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state() {
    return this.expectedState;
  }
  clientInformation() {
    return this.state_.client as OAuthClientInformationMixed | undefined;
  }
  async saveClientInformation(info: OAuthClientInformationMixed) {
    this.state_ = { ...this.state_, client: info };
    await this.store.write(this.state_);
  }
  tokens() {
    return this.state_.tokens as OAuthTokens | undefined;
  }
  async saveTokens(tokens: OAuthTokens) {
    const expiresAt = typeof tokens.expires_in === 'number' ? Date.now() + tokens.expires_in * 1000 : undefined;
    const { expires_at: _old, ...rest } = this.state_;
    this.state_ = { ...rest, tokens, ...(expiresAt !== undefined ? { expires_at: expiresAt } : {}) };
    await this.store.write(this.state_);
  }
  discovery: OAuthDiscoveryState | undefined;
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovery = state;
  }
  discoveryState() {
    return this.discovery;
  }
  /** The authorization server's issuer, once discovered. */
  get issuer(): string | undefined {
    return this.discovery?.authorizationServerMetadata?.issuer ?? this.discovery?.authorizationServerUrl;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
    this.onRedirect(url);
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    if (!this.verifier) throw new OAuthClientError('SIGN_IN', 'no PKCE verifier for this sign-in');
    return this.verifier;
  }
  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery') {
    if (scope === 'verifier') {
      this.verifier = '';
      return;
    }
    if (scope === 'discovery') return;
    const next: StoredCredentials = { version: 1, server: this.state_.server };
    if (scope === 'tokens' && this.state_.client) next.client = this.state_.client;
    this.state_ = next;
    await this.store.write(this.state_);
  }
}

function usable(c: StoredCredentials, rejected: string | undefined, marginMs: number): string | undefined {
  const token = c.tokens?.access_token;
  if (!token || token === rejected) return undefined;
  if (c.expires_at !== undefined && c.expires_at - marginMs <= Date.now()) return undefined;
  return token;
}

const sameIssuer = (a: string, b: string) => a.replace(/\/+$/, '') === b.replace(/\/+$/, '');

/**
 * OAuth for a local program: the token file is the source of truth and is re-read
 * on every use; refresh and sign-in run under a lock file, and re-read the file
 * once they hold it, so concurrent processes sign in once and refresh once.
 *
 * @example
 * const session = createOAuthSession({ mcpUrl: 'https://farebox.example/mcp', tokenPath, clientName: '@farebox/mcp' });
 * const token = await session.accessToken();
 */
export function createOAuthSession(options: OAuthSessionOptions): OAuthSession {
  const store = createTokenStore(options.tokenPath);
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const margin = options.refreshMarginMs ?? 60_000;
  const signInTimeoutMs = options.signInTimeoutMs ?? 10 * 60_000;
  const serverUrl = new URL(options.mcpUrl);
  // One refresh or sign-in at a time inside this process too (parallel tool calls).
  let inflight: Promise<string> | undefined;

  async function renew(rejected: string | undefined): Promise<string> {
    return withFileLock(
      `${options.tokenPath}.lock`,
      async () => {
        // Another process may have refreshed or signed in while we waited.
        const current = await store.read(options.mcpUrl);
        const fresh = usable(current, rejected, margin);
        if (fresh) return fresh;
        const state = randomBytes(16).toString('base64url');
        const cb = await startCallback(state);
        try {
          let redirectedTo: URL | undefined;
          const provider = new FileProvider(current, store, cb.redirectUrl, options.clientName, state, (url) => {
            redirectedTo = url;
          });
          const result = await auth(provider, { serverUrl });
          if (result === 'AUTHORIZED') {
            const token = usable(provider.credentials, undefined, 0);
            if (!token) throw new OAuthClientError('GATEWAY', 'the gateway answered the refresh without a usable access token');
            return token;
          }
          const url = redirectedTo;
          if (!url) throw new OAuthClientError('GATEWAY', 'the OAuth flow asked for a sign-in without an authorization URL');
          log('');
          log(`Farebox: sign in to connect ${options.clientName} to ${serverUrl.origin}. Open this address in a browser:`);
          log(`  ${url.href}`);
          log('Waiting for the sign-in to finish...');
          if (options.openBrowser !== false) openBrowser(url.href);
          let timer: ReturnType<typeof setTimeout> | undefined;
          const timeout = new Promise<never>((_, reject) => {
            timer = setTimeout(
              () => reject(new OAuthClientError('SIGN_IN', `the sign-in was not completed within ${Math.round(signInTimeoutMs / 1000)} s`)),
              signInTimeoutMs,
            );
          });
          const response = await Promise.race([cb.code, timeout]).finally(() => clearTimeout(timer));
          // RFC 9207: the response names the issuer we started with (mix-up defence).
          const issuer = provider.issuer ?? url.origin;
          if (response.iss !== null && !sameIssuer(response.iss, issuer)) {
            throw new OAuthClientError('SIGN_IN', `the authorization response comes from ${response.iss}, not ${issuer}`);
          }
          await auth(provider, { serverUrl, authorizationCode: response.code });
          const token = usable(provider.credentials, undefined, 0);
          if (!token) throw new OAuthClientError('GATEWAY', 'the gateway issued no usable access token');
          log('Farebox: signed in.');
          return token;
        } catch (e) {
          if (e instanceof OAuthClientError) throw e;
          throw new OAuthClientError('GATEWAY', `Farebox sign-in failed: ${(e as Error).message}`);
        } finally {
          await cb.close();
        }
      },
      options.lock ?? {},
    );
  }

  return {
    store,
    async accessToken(opts = {}) {
      const current = await store.read(options.mcpUrl);
      const token = usable(current, opts.rejected, margin);
      if (token) return token;
      inflight ??= renew(opts.rejected).finally(() => {
        inflight = undefined;
      });
      return inflight;
    },
    async signOut() {
      await withFileLock(`${options.tokenPath}.lock`, () => store.clear(), options.lock ?? {});
    },
  };
}

/** Bearer-authenticated fetch that renews the token once when the server refuses it (expired, revoked, refresh failed: sign in again). */
export function oauthFetch(session: OAuthSession, base: typeof fetch = fetch): FetchLike {
  return async (url, init = {}) => {
    const send = (token: string) => {
      const headers = new Headers(init.headers);
      headers.set('authorization', `Bearer ${token}`);
      if (!headers.has('x-request-id')) headers.set('x-request-id', randomUUID());
      return base(url, { ...init, headers });
    };
    const token = await session.accessToken();
    const res = await send(token);
    if (res.status !== 401) return res;
    await res.body?.cancel().catch(() => undefined);
    return send(await session.accessToken({ rejected: token }));
  };
}
