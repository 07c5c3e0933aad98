// `@farebox/client/oauth`: the OAuth client of a local program (Node): browser
// sign-in with PKCE on a loopback redirect, the token file shared by every
// process of the user, refresh under a file lock. Used by the stdio MCP
// adapter and the CLI.
export { createOAuthSession, oauthFetch } from './session.js';
export { openBrowser } from './callback.js';
export type { AccessTokenOptions, OAuthSession, OAuthSessionOptions } from './session.js';
export { createTokenStore, writeFileAtomic } from './token-store.js';
export type { TokenStore, StoredCredentials } from './token-store.js';
export { withFileLock } from './lock.js';
export type { LockOptions } from './lock.js';
export { configDir, DEFAULT_GATEWAY_URL } from './config.js';
export { OAuthClientError } from './errors.js';
export type { OAuthClientErrorCode } from './errors.js';
