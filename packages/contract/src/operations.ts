import { z } from 'zod';
import { bazaarOperations } from './bazaar.js';
import { healthOperations } from './health.js';
import { publisherLinkOperations } from './publisher-links.js';
import { webhookOperations } from './webhooks.js';
import { facilitatorOperations } from './x402.js';
import * as C from './connection-confirmations.js';
import * as I from './inputs.js';
import { account, NONE, OAUTH_SCOPES, OPERATOR, spend, type Operation } from './operation.js';
import * as S from './all-schemas.js';
import { POLICY_ERRORS } from './spending.js';

export { OAUTH_SCOPES };
export { CREDENTIAL_KINDS, credentialReaches } from './operation.js';
export type { Auth, CredentialKind, HttpMethod, OAuthScope, Operation, OperationInput } from './operation.js';

const AUTH_ERRORS = {
  401: 'missing or invalid credential (`authentication required`, `invalid credential`, `session expired`)',
  403: 'a cookie write without the CSRF token or from another origin, an OAuth token without the scope, or a spend key on an operation it does not reach (`code` CREDENTIAL_KIND)',
  429: 'rate limit exceeded (`Retry-After`)',
} as const;
const OPERATOR_ERRORS = { ...AUTH_ERRORS, 403: 'not an operator (audited), an OAuth token, or a spend key' } as const;
const LIMIT = (name: string, min: number, max: number) => ({ 400: `invalid ${name} (must be ${min} <= n <= ${max})` });
const { LIST_LIMITS, listQuery: allQuery } = I;

/** Identity helper that keeps each operation's literal types (for the typed client). */
const op = <const O extends Operation>(o: O): O => o;

/**
 * Every REST operation of the gateway: `/auth`, `/v1`, the operator API, the platform routes and the x402
 * routes (facilitator, bazaar). The gateway mounts this table (the x402 routes have their own), the OAuth
 * scope rule and the OpenAPI document are derived from it, and `@farebox/client` builds its methods from it.
 *
 * Not in it: the OAuth authorization server (`/.well-known/*`, `/register`, `/authorize`, `/token`,
 * `/revoke`: form-encoded RFC 6749/7591/7009/8414 protocols), `/mcp` (JSON-RPC, MCP's own schema),
 * `/metrics` (Prometheus text on its own listener or behind a token), the dashboard's static files
 * and the embedded devnet.
 */
// biome-ignore format: a table, one operation per line where it fits; wrapped, it would be three times as long
export const operations = {
  // ---- accounts (browser sign-in) ---------------------------------------------
  signup: op({
    id: 'signup',
    method: 'POST',
    path: '/auth/signup',
    tag: 'accounts',
    summary: 'Create an account (sets the session cookie)',
    auth: NONE,
    form: true,
    input: { body: I.SignupBody },
    status: 201,
    output: S.SessionAccount,
    errors: { 400: 'invalid e-mail or password', 403: 'foreign Host or Origin', 409: 'an account with this e-mail exists', 429: AUTH_ERRORS[429] },
  }),
  login: op({
    id: 'login',
    method: 'POST',
    path: '/auth/login',
    tag: 'accounts',
    summary: 'Sign in (sets the session cookie)',
    auth: NONE,
    form: true,
    input: { body: I.LoginBody },
    status: 200,
    output: S.SessionAccount,
    errors: { 400: 'e-mail or password missing', 401: 'invalid email or password', 403: 'foreign Host or Origin', 429: AUTH_ERRORS[429] },
  }),
  logout: op({
    id: 'logout',
    method: 'POST',
    path: '/auth/logout',
    tag: 'accounts',
    summary: 'Sign out (clears the session cookies)',
    auth: NONE,
    form: true,
    input: {},
    status: 200,
    output: S.LoggedOut,
    errors: { 403: 'foreign Host or Origin, or a session without its CSRF token' },
  }),

  // ---- account -------------------------------------------------------------------
  me: op({ id: 'me', method: 'GET', path: '/v1/me', tag: 'account', summary: 'The account and its balance', auth: spend('account:read'), input: {}, status: 200, output: S.Account, errors: AUTH_ERRORS }),
  balance: op({ id: 'balance', method: 'GET', path: '/v1/balance', tag: 'account', summary: 'Credits and wallet', auth: spend('account:read'), input: {}, status: 200, output: S.Balance, errors: AUTH_ERRORS }),
  wallet: op({ id: 'wallet', method: 'GET', path: '/v1/wallet', tag: 'account', summary: 'The on-chain wallet', auth: spend('account:read'), input: {}, status: 200, output: S.Wallet, errors: AUTH_ERRORS }),
  topup: op({
    id: 'topup',
    method: 'POST',
    path: '/v1/topup',
    tag: 'account',
    summary: "Add credits (paid in USDC from the account's wallet, or free test credits)",
    auth: account(),
    input: { body: I.TopupBody, headers: I.IdempotencyHeaders },
    status: 200,
    output: S.TopupResult,
    errors: {
      ...AUTH_ERRORS,
      400: 'invalid amount (must be 0 < n <= 1000); balance cap exceeded (max $10000); invalid Idempotency-Key',
      402: 'insufficient USDC in your wallet: ...',
      409: I.IDEMPOTENCY_CONFLICT,
      500: 'the payment was refused, or is submitted and not confirmed yet',
      503: 'the wallet is still being set up (`Retry-After`)',
    },
  }),
  transactions: op({
    id: 'transactions',
    method: 'GET',
    path: '/v1/transactions',
    tag: 'account',
    summary: 'Top-ups and calls, newest first',
    auth: spend('account:read'),
    input: { query: z.object({ limit: I.intQuery('limit', 1, 500, 50) }) },
    status: 200,
    output: z.array(S.Transaction),
    errors: { ...AUTH_ERRORS, ...LIMIT('limit', 1, 500) },
  }),

  // ---- catalog and calls -----------------------------------------------------------
  listAgents: op({
    id: 'listAgents',
    method: 'GET',
    path: '/v1/agents',
    tag: 'catalog',
    summary: 'The catalog; with `q`, hybrid search ordered by relevance',
    auth: spend('agents:read'),
    input: { query: allQuery(LIST_LIMITS.agents, 'all, or 50 hits with q').extend({ q: z.string().optional().catch(undefined).meta({ type: 'string', description: 'free text, any language (at most 512 characters); anything but one string is ignored' } as Record<string, unknown>) }) },
    status: 200,
    output: z.array(S.Service),
    errors: { ...AUTH_ERRORS, 400: `query too long (max 512); invalid limit (must be 1 <= n <= ${LIST_LIMITS.agents})` },
  }),
  agentManifest: op({
    id: 'agentManifest',
    method: 'GET',
    path: '/v1/agents/:service/manifest',
    tag: 'catalog',
    summary: "A service's own pricing note, from its /manifest",
    auth: spend('agents:read'),
    input: { params: I.ServiceParams },
    status: 200,
    output: S.ServiceManifest,
    errors: { ...AUTH_ERRORS, 400: 'malformed percent-encoding in the URL', 404: 'service not found', 500: 'service manifest unavailable: ...' },
  }),
  call: op({
    id: 'call',
    method: 'POST',
    path: '/v1/call',
    tag: 'catalog',
    summary: 'Call a service, paid from credits (or the wallet)',
    auth: spend('agents:call'),
    input: { body: I.CallBody, headers: I.CallHeaders },
    status: 200,
    output: S.CallResult,
    errors: {
      ...AUTH_ERRORS,
      400: 'service required; invalid service name: ...; payload required; an unknown-field message; invalid <field>: control character U+.... not allowed (or unpaired surrogate); invalid Farebox-Max-Cost; this call to <service> costs $<price>, over the most it may cost ($<max>: Farebox-Max-Cost, --max-cost in the CLI); nothing was charged',
      402: 'insufficient balance; or the spending limit of the key or connection is reached (SpendingRefusal)',
      403: "the key's or connection's spending policy does not allow the service or the price (SpendingRefusal); the token lacks agents:call; or the connection's owner must approve this call first (`code` CONFIRMATION_REQUIRED, `approval_url`, `approval_id`: send the call again with `Farebox-Approval` once approved)",
      404: 'service not found',
      409: I.IDEMPOTENCY_CONFLICT,
      500: 'the service failed (refunded): the reason, callId and trace', 503: 'database unavailable; nothing was charged, retry in a few seconds (`Retry-After`)',
    },
    errorBody: S.CallError,
  }),

  // ---- credentials -------------------------------------------------------------------
  listApiKeys: op({ id: 'listApiKeys', method: 'GET', path: '/v1/api-keys', tag: 'credentials', summary: 'Live API keys', auth: account(), input: { query: allQuery(LIST_LIMITS.account) }, status: 200, output: z.array(S.ApiKey), errors: { ...AUTH_ERRORS, ...LIMIT('limit', 1, LIST_LIMITS.account) } }),
  createApiKey: op({
    id: 'createApiKey',
    method: 'POST',
    path: '/v1/api-keys',
    tag: 'credentials',
    summary: 'Create an API key (the plain key is in this answer once)',
    auth: account(),
    input: { body: I.CreateApiKeyBody },
    status: 201,
    output: S.CreatedApiKey,
    errors: { ...AUTH_ERRORS, 400: `name required; name too long (max 64); invalid name: control character U+.... not allowed; ${POLICY_ERRORS}` },
  }),
  updateApiKey: op({ id: 'updateApiKey', method: 'PATCH', path: '/v1/api-keys/:id', tag: 'credentials', summary: "Rename an API key or change its spending policy (applies to the key's next call)", auth: account(), input: { params: I.IdParams, body: I.UpdateApiKeyBody }, status: 200, output: S.ApiKey, errors: { ...AUTH_ERRORS, 400: POLICY_ERRORS, 404: 'api key not found' } }),
  revokeApiKey: op({
    id: 'revokeApiKey',
    method: 'DELETE',
    path: '/v1/api-keys/:id',
    tag: 'credentials',
    summary: 'Revoke an API key',
    auth: account(),
    input: { params: I.IdParams },
    status: 200,
    output: S.Revoked,
    errors: { ...AUTH_ERRORS, 404: 'api key not found' },
  }),
  listOAuthConnections: op({
    id: 'listOAuthConnections',
    method: 'GET',
    path: '/v1/oauth/connections',
    tag: 'credentials',
    summary: 'Apps authorized through OAuth',
    auth: account(),
    input: { query: allQuery(LIST_LIMITS.account) },
    status: 200,
    output: z.array(C.OAuthConnection),
    errors: { ...AUTH_ERRORS, ...LIMIT('limit', 1, LIST_LIMITS.account) },
  }),
  revokeOAuthConnection: op({
    id: 'revokeOAuthConnection',
    method: 'DELETE',
    path: '/v1/oauth/connections/:id',
    tag: 'credentials',
    summary: 'Disconnect an app (revokes its tokens)',
    auth: account(),
    input: { params: I.IdParams },
    status: 200,
    output: S.Revoked,
    errors: { ...AUTH_ERRORS, 404: 'connection not found' },
  }),
  updateOAuthConnection: op({ id: 'updateOAuthConnection', method: 'PATCH', path: '/v1/oauth/connections/:id', tag: 'credentials', summary: "Change a connection's spending policy or confirmation threshold (applies to its next call)", auth: account(), input: { params: I.IdParams, body: C.UpdateOAuthConnectionBody }, status: 200, output: C.OAuthConnection, errors: { ...AUTH_ERRORS, 400: `${POLICY_ERRORS}; ${C.THRESHOLD_ERRORS}`, 404: 'connection not found' } }),

  // ---- publisher ---------------------------------------------------------------------
  activatePublisher: op({
    id: 'activatePublisher',
    method: 'POST',
    path: '/v1/publisher/activate',
    tag: 'publisher',
    summary: 'Turn the account into a publisher',
    auth: account(),
    input: { body: I.NameBody },
    status: 200,
    output: S.PublisherActivation,
    errors: { ...AUTH_ERRORS, 400: 'name required; name too long (max 64); invalid name: control character U+.... not allowed' },
  }),
  publisherOverview: op({
    id: 'publisherOverview',
    method: 'GET',
    path: '/v1/publisher/overview',
    tag: 'publisher',
    summary: 'Earnings, calls, services with stats, wallet',
    auth: account(),
    input: {},
    status: 200,
    output: S.PublisherOverview,
    errors: { ...AUTH_ERRORS, 403: 'activate publishing first (POST /v1/publisher/activate)' },
  }),
  publisherSettlements: op({
    id: 'publisherSettlements',
    method: 'GET',
    path: '/v1/publisher/settlements',
    tag: 'publisher',
    summary: 'Settlement batches, newest first',
    auth: account(),
    input: { query: z.object({ limit: I.intQuery('limit', 1, 200, 50) }) },
    status: 200,
    output: z.array(S.Settlement),
    errors: { ...AUTH_ERRORS, ...LIMIT('limit', 1, 200), 403: 'activate publishing first (POST /v1/publisher/activate)' },
  }),
  publisherAnalytics: op({
    id: 'publisherAnalytics',
    method: 'GET',
    path: '/v1/publisher/analytics',
    tag: 'publisher',
    summary: 'Daily earnings, oldest first',
    auth: account(),
    input: { query: z.object({ days: I.intQuery('days', 1, 90, 30) }) },
    status: 200,
    output: z.array(S.AnalyticsPoint),
    errors: { ...AUTH_ERRORS, ...LIMIT('days', 1, 90), 403: 'activate publishing first (POST /v1/publisher/activate)' },
  }),
  publisherSettle: op({
    id: 'publisherSettle',
    method: 'POST',
    path: '/v1/publisher/settle',
    tag: 'publisher',
    summary: "Close the caller's settlement cycle now and run it to the end",
    auth: account(),
    input: {},
    status: 200,
    output: S.SettleResult,
    errors: { ...AUTH_ERRORS, 403: 'activate publishing first (POST /v1/publisher/activate)', 500: 'a settlement step failed' },
  }),
  myAgents: op({
    id: 'myAgents',
    method: 'GET',
    path: '/v1/agents/mine',
    tag: 'publisher',
    summary: 'Services registered by this account',
    auth: account(),
    input: { query: allQuery(LIST_LIMITS.account) },
    status: 200,
    output: z.array(S.Service),
    errors: { ...AUTH_ERRORS, ...LIMIT('limit', 1, LIST_LIMITS.account) },
  }),
  registerAgent: op({
    id: 'registerAgent',
    method: 'POST',
    path: '/v1/agents',
    tag: 'publisher',
    summary: "Register a service (signed by the account's wallet)",
    auth: account(),
    input: { body: I.RegisterServiceBody },
    status: 201,
    output: S.RegisteredService,
    errors: { ...AUTH_ERRORS, 400: 'a missing or invalid field (invalid service name: ...; invalid <field>: control character U+.... not allowed; pricePerCallLamports must be at least 20 base units ...; price required: USDC per call as a decimal string, e.g. "0.002" ...; a price over 100 USDC without maxPrice); endpoint resolves to a private or reserved address', 403: 'activate publishing first (POST /v1/publisher/activate)', 409: 'the name is taken' },
  }),
  updateAgent: op({
    id: 'updateAgent',
    method: 'PUT',
    path: '/v1/agents/:service',
    tag: 'publisher',
    summary: 'Update a registered service',
    auth: account(),
    input: { params: I.ServiceParams, body: I.UpdateServiceBody },
    status: 200,
    output: S.RegisteredService,
    errors: { ...AUTH_ERRORS, 400: 'nothing to update (price, pricePerCallLamports, endpoint or description); an invalid field (pricePerCallLamports must be at least 20 base units ...; price "$0.002": write the USDC amount alone ...; price over 100 USDC without maxPrice)', 403: 'activate publishing first (POST /v1/publisher/activate); service <name> belongs to another publisher', 404: 'service not found' },
  }),
  removeAgent: op({
    id: 'removeAgent',
    method: 'DELETE',
    path: '/v1/agents/:service',
    tag: 'publisher',
    summary: 'Remove a registration',
    auth: account(),
    input: { params: I.ServiceParams },
    status: 200,
    output: S.RemovedService,
    errors: { ...AUTH_ERRORS, 403: 'activate publishing first (POST /v1/publisher/activate); service <name> belongs to another publisher', 404: 'service not found' },
  }),

  ...bazaarOperations, ...facilitatorOperations, ...healthOperations, ...webhookOperations, ...publisherLinkOperations,
  // ---- platform ----------------------------------------------------------------------
  platformStats: op({ id: 'platformStats', method: 'GET', path: '/v1/platform/stats', tag: 'platform', summary: 'Marketplace stats and platform revenue', auth: account(), input: {}, status: 200, output: S.PlatformStats, errors: AUTH_ERRORS }),
  platformKey: op({ id: 'platformKey', method: 'GET', path: '/v1/platform/key', tag: 'platform', summary: "The platform's public key and network (no credential)", auth: NONE, input: {}, status: 200, output: S.PlatformKey, errors: {} }),
  health: op({ id: 'health', method: 'GET', path: '/health', tag: 'platform', summary: 'Liveness (no credential)', auth: NONE, input: {}, status: 200, output: S.Health, errors: {} }),
  ready: op({
    id: 'ready',
    method: 'GET',
    path: '/health/ready',
    tag: 'platform',
    summary: 'Readiness: this gateway can answer calls correctly; degraded dependencies named (no credential)',
    auth: NONE,
    input: {},
    status: 200,
    output: S.Readiness,
    errors: { 503: 'not ready (a required dependency is down): the body is the Readiness object with the reasons' },
    errorBody: S.Readiness,
  }),

  // ---- disputes (the funder's signed proof is the credential) ---------------------------
  openDispute: op({
    id: 'openDispute',
    method: 'POST',
    path: '/v1/disputes',
    tag: 'disputes',
    summary: 'Open a dispute on a direct escrow (201 new, 200 already open)',
    auth: NONE,
    ipRateLimited: true,
    input: { body: I.OpenDisputeBody },
    status: 201,
    alsoStatus: { status: 200, description: 'the dispute was already open' },
    output: S.Dispute,
    errors: { 400: 'a missing or invalid field, or a proof that does not verify', 409: 'the escrow cannot be disputed', 429: AUTH_ERRORS[429], 503: 'disputes are not enabled on this gateway' },
  }),
  disputeStatus: op({
    id: 'disputeStatus',
    method: 'GET',
    path: '/v1/disputes/:escrowId',
    tag: 'disputes',
    summary: "A dispute's state",
    auth: NONE,
    ipRateLimited: true,
    input: { params: I.EscrowParams },
    status: 200,
    output: S.Dispute,
    errors: { 404: 'dispute not found', 429: AUTH_ERRORS[429] },
  }),

  // ---- operator ------------------------------------------------------------------------
  operatorWhoami: op({ id: 'operatorWhoami', method: 'GET', path: '/v1/operator/whoami', tag: 'operator', summary: 'Whether this account is an operator', auth: account(), input: {}, status: 200, output: S.OperatorWhoami, errors: AUTH_ERRORS }),
  operatorDisputes: op({
    id: 'operatorDisputes',
    method: 'GET',
    path: '/v1/operator/disputes',
    tag: 'operator',
    summary: 'Disputes by state',
    auth: OPERATOR,
    input: { query: z.object({ state: z.enum(['open', 'resolved', 'all'], { error: 'state must be open, resolved or all' }).optional().meta({ description: 'default open' }), limit: I.intQuery('limit', 1, 500, 100) }) },
    status: 200,
    output: z.array(S.Dispute),
    errors: { ...OPERATOR_ERRORS, 400: 'state must be open, resolved or all; invalid limit (must be 1 <= n <= 500)' },
  }),
  operatorResolveDispute: op({
    id: 'operatorResolveDispute',
    method: 'POST',
    path: '/v1/operator/disputes/:escrowId/resolve',
    tag: 'operator',
    summary: 'Resolve a dispute: refund or split',
    auth: OPERATOR,
    input: { params: I.EscrowParams, body: I.ResolveDisputeBody },
    status: 200,
    output: S.Dispute,
    errors: { ...OPERATOR_ERRORS, 400: 'action must be refund or split; the split must sum exactly to the escrow balance', 404: 'dispute not found', 409: 'already resolved' },
  }),
  operatorTreasury: op({ id: 'operatorTreasury', method: 'GET', path: '/v1/operator/treasury', tag: 'operator', summary: 'Treasury balance against obligations', auth: OPERATOR, input: {}, status: 200, output: S.Treasury, errors: OPERATOR_ERRORS }),
  operatorSettlements: op({
    id: 'operatorSettlements',
    method: 'GET',
    path: '/v1/operator/settlements',
    tag: 'operator',
    summary: "Every publisher's settlement cycles, newest first",
    auth: OPERATOR,
    input: {
      query: z.object({
        state: z.string().optional().meta({ description: 'all (default), active, or one of open, closing, deployed, funded, released, swept, done, failed' }),
        limit: I.intQuery('limit', 1, 200, 50),
      }),
    },
    status: 200,
    output: z.array(S.OperatorSettlement),
    errors: { ...OPERATOR_ERRORS, 400: 'state must be all, active or one of ...; invalid limit (must be 1 <= n <= 200)' },
  }),
  operatorRetrySettlement: op({
    id: 'operatorRetrySettlement',
    method: 'POST',
    path: '/v1/operator/settlements/:id/retry',
    tag: 'operator',
    summary: 'Drive an interrupted settlement cycle now',
    auth: OPERATOR,
    input: { params: I.IdParams },
    status: 200,
    output: S.SettlementRetry,
    errors: { ...OPERATOR_ERRORS, 400: 'cycle id must be an integer', 404: 'settlement cycle not found', 409: 'the cycle is done or failed', 503: 'on-chain settlement is not enabled on this gateway' },
  }),
  operatorRevenue: op({
    id: 'operatorRevenue',
    method: 'GET',
    path: '/v1/operator/revenue',
    tag: 'operator',
    summary: 'Platform fees per day',
    auth: OPERATOR,
    input: { query: z.object({ days: I.intQuery('days', 1, 365, 30) }) },
    status: 200,
    output: S.Revenue,
    errors: { ...OPERATOR_ERRORS, ...LIMIT('days', 1, 365) },
  }),
  operatorAudit: op({
    id: 'operatorAudit',
    method: 'GET',
    path: '/v1/operator/audit',
    tag: 'operator',
    summary: 'The audit log, newest first',
    auth: OPERATOR,
    input: { query: z.object({ limit: I.intQuery('limit', 1, 1000, 100) }) },
    status: 200,
    output: z.array(S.AuditEntry),
    errors: { ...OPERATOR_ERRORS, ...LIMIT('limit', 1, 1000) },
  }),
  operatorReconciliation: op({
    id: 'operatorReconciliation',
    method: 'GET',
    path: '/v1/operator/reconciliation',
    tag: 'operator',
    summary: 'Every wallet-backed credit checked against the chain, the ledger audit, and the treasury against what it owes',
    auth: OPERATOR,
    input: {},
    status: 200,
    output: S.Reconciliation,
    errors: OPERATOR_ERRORS,
  }),
} as const satisfies Record<string, Operation>;

export type Operations = typeof operations;
export type OperationId = keyof Operations;

/** The table as a list, in declaration order. */
export const operationList: readonly Operation[] = Object.values(operations);

/** The OpenAPI form of an Express path: `/v1/agents/:service` -> `/v1/agents/{service}`. */
export const openApiPath = (path: string): string => path.replace(/:([A-Za-z_]\w*)/g, '{$1}');

/**
 * The operation a request is for (method and path, the path without query),
 * or undefined. Literal segments win over parameters (`/v1/agents/mine` is
 * not `/v1/agents/:service`).
 */
export function findOperation(method: string, path: string): Operation | undefined {
  const m = method.toUpperCase();
  const parts = path.replace(/\/+$/, '').split('/');
  let best: { op: Operation; params: number } | undefined;
  for (const o of operationList) {
    if (o.method !== m) continue;
    const want = o.path.split('/');
    if (want.length !== parts.length) continue;
    let params = 0;
    const ok = want.every((w, i) => {
      if (w.startsWith(':')) return parts[i] !== '' && ++params > 0;
      return w === parts[i];
    });
    if (ok && (!best || params < best.params)) best = { op: o, params };
  }
  return best?.op;
}
