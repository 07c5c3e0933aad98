import { randomBytes, randomUUID } from 'node:crypto';
import { auth, type OAuthClientProvider, type OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { openBrowser, startCallback } from './callback.js';
import { bearerChallenge, discover, issRefusal, scopesOf } from './checks.js';
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

/** What {@link OAuthSession.accessToken} is asked for after the server refused a request. */
export interface AccessTokenOptions {
  /** The access token the server just refused: it is refreshed (or a new sign-in follows if the refresh fails). */
  rejected?: string;
  /**
   * The refusal's `WWW-Authenticate` header (a Bearer challenge, RFC 6750).
   * Its `resource_metadata` is where the resource's metadata is read (RFC 9728)
   * and its `scope` what a sign-in asks for (else the resource's
   * `scopes_supported`). With `error="insufficient_scope"` (a `403`) the token
   * lacks a scope: a refresh cannot widen a grant, so the user signs in again,
   * asking for the scopes the token has and the challenged ones (step-up).
   */
  challenge?: string;
}

/** OAuth credentials of one gateway, shared by every process of the user through the token file. */
export interface OAuthSession {
  /**
   * A usable access token: the stored one, else a refreshed one, else a new
   * one from a browser sign-in. After a refusal, pass the refused token as
   * `rejected` (and the refusal's `WWW-Authenticate` as `challenge`) to force
   * a refresh or a new sign-in.
   */
  accessToken(options?: AccessTokenOptions): Promise<string>;
  /**
   * The stored access token (refreshed when it expired) without any sign-in:
   * `undefined` when there is none, so the first request goes without and its
   * `401` challenge says what to sign in for.
   */
  storedToken(): Promise<string | undefined>;
  /** Forgets the stored credentials (next use signs in again). */
  signOut(): Promise<void>;
  readonly store: TokenStore;
}

/** Client metadata with `application_type` (RFC 7591 / OpenID registration), which the SDK's type does not list; the SDK sends the object as it is. */
type NativeClientMetadata = OAuthClientMetadata & { application_type: 'native' | 'web' };

/**
 * The MCP SDK's {@link OAuthClientProvider} over the token file: what the SDK
 * saves is written through at once (the caller holds the lock); the PKCE
 * verifier stays in memory, so a second process cannot overwrite it.
 */
class FileProvider implements OAuthClientProvider {
  verifier = '';
  /** The scope the authorization request asked for (what a token answer without `scope` was granted, RFC 6749 5.1). */
  private askedScope: string | undefined;
  constructor(
    private state_: StoredCredentials,
    private readonly store: TokenStore,
    readonly redirectUrl: string,
    private readonly clientName: string,
    private readonly expectedState: string,
    private readonly onRedirect: (url: URL) => void,
    /** Step-up: the stored tokens are not offered for a refresh (it cannot widen the grant); a new authorization replaces them. */
    private readonly ignoreStoredTokens: boolean,
  ) {}

  get credentials(): StoredCredentials {
    return this.state_;
  }
  get clientMetadata(): NativeClientMetadata {
    return {
      client_name: this.clientName,
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      // A program on the user's machine with a loopback redirect (RFC 8252; MCP SEP-837).
      application_type: 'native',
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
    return this.ignoreStoredTokens ? undefined : (this.state_.tokens as OAuthTokens | undefined);
  }
  async saveTokens(tokens: OAuthTokens) {
    const expiresAt = typeof tokens.expires_in === 'number' ? Date.now() + tokens.expires_in * 1000 : undefined;
    const scope = tokens.scope ?? this.askedScope ?? this.state_.tokens?.scope;
    const { expires_at: _old, ...rest } = this.state_;
    this.state_ = { ...rest, tokens: { ...tokens, ...(scope !== undefined ? { scope } : {}) }, ...(expiresAt !== undefined ? { expires_at: expiresAt } : {}) };
    await this.store.write(this.state_);
  }
  discovery: OAuthDiscoveryState | undefined;
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovery = state;
  }
  discoveryState() {
    return this.discovery;
  }
  redirectToAuthorization(url: URL) {
    this.askedScope = url.searchParams.get('scope') ?? undefined;
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

/** What a renewal must give: a token other than `rejected`; with `stepUp`, one that carries every scope of `scope`. */
interface Need {
  rejected: string | undefined;
  /** What a sign-in asks for (undefined: the resource's `scopes_supported`). */
  scope: string | undefined;
  stepUp: boolean;
  resourceMetadataUrl: URL | undefined;
}

function usable(c: StoredCredentials, need: Pick<Need, 'rejected' | 'scope' | 'stepUp'>, marginMs: number): string | undefined {
  const token = c.tokens?.access_token;
  if (!token || token === need.rejected) return undefined;
  if (c.expires_at !== undefined && c.expires_at - marginMs <= Date.now()) return undefined;
  if (need.stepUp) {
    const has = new Set(scopesOf(c.tokens?.scope));
    if (!scopesOf(need.scope).every((s) => has.has(s))) return undefined;
  }
  return token;
}

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
  let inflight: Promise<string | undefined> | undefined;

  /** Refresh or (when `interactive`) sign in, under the lock; `undefined` when not interactive and a sign-in is needed. */
  async function renew(need: Need, interactive: boolean): Promise<string | undefined> {
    return withFileLock(
      `${options.tokenPath}.lock`,
      async () => {
        // Another process may have refreshed or signed in while we waited.
        const current = await store.read(options.mcpUrl);
        const fresh = usable(current, need, margin);
        if (fresh) return fresh;
        if (!interactive && !current.tokens) return undefined;
        const state = randomBytes(16).toString('base64url');
        // Set once the authorization server is known: what its authorization response must say (RFC 9207).
        let expected: { issuer: string; issAdvertised: boolean } | undefined;
        const cb = await startCallback(state, (params) => (expected ? issRefusal(params.get('iss'), expected.issuer, expected.issAdvertised) : undefined));
        try {
          let redirectedTo: URL | undefined;
          const provider = new FileProvider(
            current,
            store,
            cb.redirectUrl,
            options.clientName,
            state,
            (url) => {
              redirectedTo = url;
            },
            need.stepUp,
          );
          const discovery = await discover(serverUrl, need.resourceMetadataUrl);
          provider.saveDiscoveryState(discovery);
          expected = {
            issuer: discovery.issuer,
            issAdvertised:
              (discovery.authorizationServerMetadata as { authorization_response_iss_parameter_supported?: unknown } | undefined)
                ?.authorization_response_iss_parameter_supported === true,
          };
          const authOptions = {
            serverUrl,
            ...(need.scope ? { scope: need.scope } : {}),
            ...(need.resourceMetadataUrl ? { resourceMetadataUrl: need.resourceMetadataUrl } : {}),
          };
          const result = await auth(provider, authOptions);
          if (result === 'AUTHORIZED') {
            const token = usable(provider.credentials, { rejected: undefined, scope: undefined, stepUp: false }, 0);
            if (!token) throw new OAuthClientError('GATEWAY', 'the gateway answered the refresh without a usable access token');
            return token;
          }
          if (!interactive) return undefined;
          const url = redirectedTo;
          if (!url) throw new OAuthClientError('GATEWAY', 'the OAuth flow asked for a sign-in without an authorization URL');
          log('');
          log(
            need.stepUp
              ? `Farebox: ${serverUrl.origin} asks for more access${need.scope ? ` (${need.scope})` : ''} than ${options.clientName} was granted. Sign in again to allow it; open this address in a browser:`
              : `Farebox: sign in to connect ${options.clientName} to ${serverUrl.origin}. Open this address in a browser:`,
          );
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
          const code = await Promise.race([cb.code, timeout]).finally(() => clearTimeout(timer));
          await auth(provider, { ...authOptions, authorizationCode: code });
          const token = usable(provider.credentials, { rejected: undefined, scope: undefined, stepUp: false }, 0);
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

  /** The stored token if it meets `need`, else one renewal at a time in this process (a caller that arrives during one gets its outcome, then looks again). */
  async function obtain(need: Need, interactive: boolean): Promise<string | undefined> {
    for (;;) {
      if (inflight) {
        await inflight;
        continue;
      }
      const current = await store.read(options.mcpUrl);
      const token = usable(current, need, margin);
      if (token) return token;
      if (!interactive && !current.tokens) return undefined;
      if (inflight) continue;
      const run = renew(need, interactive).finally(() => {
        inflight = undefined;
      });
      inflight = run;
      return run;
    }
  }

  return {
    store,
    async accessToken(opts = {}) {
      const challenge = bearerChallenge(opts.challenge);
      const stepUp = challenge.error === 'insufficient_scope';
      let scope = challenge.scope || undefined;
      if (stepUp) {
        // Step-up: what the token has and what the server asks for (a union, so no earlier grant is lost).
        const current = await store.read(options.mcpUrl);
        scope = [...new Set([...scopesOf(current.tokens?.scope), ...scopesOf(scope)])].join(' ') || undefined;
      }
      let resourceMetadataUrl: URL | undefined;
      try {
        resourceMetadataUrl = challenge.resource_metadata ? new URL(challenge.resource_metadata) : undefined;
      } catch {
        resourceMetadataUrl = undefined;
      }
      const token = await obtain({ rejected: opts.rejected, scope, stepUp, resourceMetadataUrl }, true);
      if (!token) throw new OAuthClientError('GATEWAY', 'the OAuth flow ended without an access token');
      return token;
    },
    storedToken() {
      return obtain({ rejected: undefined, scope: undefined, stepUp: false, resourceMetadataUrl: undefined }, false);
    },
    async signOut() {
      await withFileLock(`${options.tokenPath}.lock`, () => store.clear(), options.lock ?? {});
    },
  };
}

/**
 * Bearer-authenticated fetch over an {@link OAuthSession}. Without a stored
 * token the request goes without one, and its `401` challenge says where the
 * resource metadata is and which scope to sign in for. A `401` renews the token
 * (refresh, else sign-in) and sends the request again, once; a `403` with
 * `error="insufficient_scope"` signs in again for the current scopes and the
 * challenged ones (step-up) and sends it again, once. A refusal after that is
 * the answer.
 */
export function oauthFetch(session: OAuthSession, base: typeof fetch = fetch): FetchLike {
  return async (url, init = {}) => {
    const send = (token: string | undefined) => {
      const headers = new Headers(init.headers);
      if (token) headers.set('authorization', `Bearer ${token}`);
      if (!headers.has('x-request-id')) headers.set('x-request-id', randomUUID());
      return base(url, { ...init, headers });
    };
    let token = await session.storedToken();
    let res = await send(token);
    let renewed = false;
    let steppedUp = false;
    for (;;) {
      const challenge = res.headers.get('www-authenticate') ?? undefined;
      const insufficientScope = res.status === 403 && token !== undefined && bearerChallenge(challenge).error === 'insufficient_scope';
      if ((res.status === 401 && !renewed) || (insufficientScope && !steppedUp)) {
        if (res.status === 401) renewed = true;
        else steppedUp = true;
        await res.body?.cancel().catch(() => undefined);
        token = await session.accessToken({ ...(token ? { rejected: token } : {}), ...(challenge ? { challenge } : {}) });
        res = await send(token);
        continue;
      }
      return res;
    }
  };
}
