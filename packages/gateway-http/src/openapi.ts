import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { CREDENTIAL_KINDS, credentialReaches, openApiPath, operationList, OAUTH_SCOPES, schemas, type Operation } from '@farebox/contract';

const TAGS: Array<{ name: Operation['tag']; description: string }> = [
  { name: 'accounts', description: 'Sign-up, sign-in and sign-out (the session cookie of the dashboard).' },
  { name: 'account', description: 'The account, its balance, wallet, top-ups and transactions.' },
  { name: 'catalog', description: 'The catalog of paid services, and calls.' },
  { name: 'credentials', description: 'API keys and OAuth connections.' },
  { name: 'webhooks', description: 'Signed webhooks: endpoints, their secrets, the delivery log (docs/webhooks.md).' },
  { name: 'publisher', description: 'Publishing services and their earnings.' },
  { name: 'platform', description: 'Platform key, stats, health.' },
  { name: 'disputes', description: "Disputes on direct escrows (the funder's signed proof is the credential)." },
  { name: 'operator', description: 'The operator API (operators only).' },
];

function security(op: Operation): Array<Record<string, string[]>> {
  switch (op.auth.kind) {
    case 'none':
      return [];
    case 'operator':
      return [{ apiKey: [] }, { session: [] }];
    case 'account':
      return [{ apiKey: [] }, { session: [] }, ...(op.auth.oauthScope ? [{ oauth: [op.auth.oauthScope] }] : [])];
  }
}

/** The categories of draft-payment-discovery-00's `x-service-info` this gateway falls in. */
export const SERVICE_CATEGORIES = ['developer-tools'] as const;

/** The MPP problem of a `402` (docs/api.md, "Calls"): `application/problem+json`, with this API's `error` and `code`. */
const MPP_PROBLEM = {
  type: 'object',
  required: ['type', 'title', 'status', 'error', 'code'],
  properties: {
    type: { type: 'string', description: '`https://paymentauth.org/problems/<code>`' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    error: { type: 'string', description: 'The detail.' },
    code: { type: 'string', description: '`PAYMENT_REQUIRED` (the challenge asked for with `Farebox-Channel`) or `PAYMENT_REFUSED` (a refused credential).' },
    challengeId: { type: 'string', description: 'The fresh challenge of `WWW-Authenticate`, when the channel is accepted.' },
  },
} as const;

export interface OpenApiOptions {
  /** This gateway's origin: the document's server, and `x-service-info.docs` as absolute URLs. */
  serverUrl?: string;
  version?: string;
  /**
   * This gateway takes MPP channel sessions (`core.mpp.calls`): `POST /v1/call`
   * carries draft-payment-discovery-00's `x-payment-info` with the channel
   * offer, paid in `currency` (the network's USDC contract, `C...`).
   */
  mpp?: { currency: string };
}

/**
 * The MPP discovery parts of the document (draft-payment-discovery-00): the
 * top-level `x-service-info`, and, with `mpp`, `POST /v1/call`'s
 * `x-payment-info` (one `session` offer: the draft's intents are `charge` and
 * `session`, an MPP channel is a session), its `402` as MPP answers it, and
 * no credential among its security requirements.
 */
function withPaymentDiscovery(doc: Record<string, unknown>, options: OpenApiOptions): Record<string, unknown> {
  const base = options.serverUrl?.replace(/\/+$/, '') ?? '';
  const out: Record<string, unknown> = {
    ...doc,
    'x-service-info': { categories: [...SERVICE_CATEGORIES], docs: { homepage: base || '/', apiReference: `${base}/openapi.json` } },
  };
  if (!options.mpp) return out;
  const paths = doc.paths as Record<string, Record<string, Record<string, unknown>>>;
  const call = paths['/v1/call']?.post;
  if (!call) return out;
  const responses = call.responses as Record<string, { description: string; content?: Record<string, unknown>; headers?: Record<string, unknown> }>;
  const refused = responses['402'];
  responses['402'] = {
    description: `Payment Required: ${refused ? `${refused.description}; or, ` : ''}paid from an MPP channel (no credential), the MPP challenge or a refused credential`,
    headers: {
      'WWW-Authenticate': { description: 'An MPP challenge: `Payment ...` (method `stellar`, intent `channel`).', schema: { type: 'string' } },
    },
    content: { ...(refused?.content ?? {}), 'application/problem+json': { schema: MPP_PROBLEM } },
  };
  call.security = [...((call.security as unknown[]) ?? []), {}];
  call['x-payment-info'] = {
    offers: [
      {
        intent: 'session',
        method: 'stellar',
        amount: null,
        currency: options.mpp.currency,
        description:
          "an MPP stellar channel (intent channel) whose recipient is the treasury; price per service (the registry's, GET /v1/agents/{service}): name the channel in Farebox-Channel for a challenge, pay with Authorization: Payment",
      },
    ],
  };
  return out;
}

/**
 * The OpenAPI 3.1 document of the gateway's REST API, generated from the
 * operation table of `@farebox/contract` by `@asteasolutions/zod-to-openapi`,
 * with the MPP discovery parts ({@link withPaymentDiscovery}).
 * Served at `GET /openapi.json`; `docs/openapi.json` is a copy without
 * options (a test keeps it up to date).
 */
export function openApiDocument(options: OpenApiOptions = {}): Record<string, unknown> {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'apiKey', { type: 'http', scheme: 'bearer', description: 'An API key: `Authorization: Bearer sk_live_...`.' });
  registry.registerComponent('securitySchemes', 'session', {
    type: 'apiKey',
    in: 'cookie',
    name: 'farebox_session',
    description: 'The session cookie set by `/auth/signup` and `/auth/login`; writes also carry the CSRF token in `X-CSRF-Token`.',
  });
  registry.registerComponent('securitySchemes', 'oauth', {
    type: 'oauth2',
    description: 'An OAuth access token (PKCE, dynamic client registration); only the operations that name a scope accept one.',
    flows: { authorizationCode: { authorizationUrl: '/authorize', tokenUrl: '/token', refreshUrl: '/token', scopes: { ...OAUTH_SCOPES } } },
  });
  for (const op of operationList) {
    const errorSchema = op.errorBody ?? schemas.ErrorBody;
    const responses: Record<string, { description: string; content?: Record<string, { schema: typeof op.output }> }> = {
      [op.status]: { description: op.summary, content: { 'application/json': { schema: op.output } } },
    };
    if (op.alsoStatus) responses[op.alsoStatus.status] = { description: op.alsoStatus.description, content: { 'application/json': { schema: op.output } } };
    if (op.form) responses[303] = { description: 'an HTML form post: redirected to `next` when it is a same-origin path, else `/`' };
    for (const [status, when] of Object.entries(op.errors)) responses[status] = { description: when, content: { 'application/json': { schema: errorSchema } } };
    registry.registerPath({
      method: op.method.toLowerCase() as 'get' | 'post' | 'put' | 'delete',
      path: openApiPath(op.path),
      operationId: op.id,
      summary: op.summary,
      tags: [op.tag],
      security: security(op),
      // The credentials that reach the operation (docs/api.md, "Credentials and what each may do"): the contract's one rule.
      'x-farebox-credentials': CREDENTIAL_KINDS.filter((k) => op.auth.kind !== 'none' && credentialReaches(op, k)),
      request: {
        ...(op.input.params ? { params: op.input.params } : {}),
        ...(op.input.query ? { query: op.input.query } : {}),
        ...(op.input.headers ? { headers: op.input.headers } : {}),
        ...(op.input.body
          ? {
              body: {
                required: true,
                content: {
                  'application/json': { schema: op.input.body },
                  ...(op.form ? { 'application/x-www-form-urlencoded': { schema: op.input.body } } : {}),
                },
              },
            }
          : {}),
      },
      responses,
    });
  }
  const generator = new OpenApiGeneratorV31(registry.definitions);
  const doc = generator.generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Farebox gateway',
      version: options.version ?? '1',
      description:
        'Pay-per-call marketplace for AI agents and APIs: the REST API of the gateway. Errors are `{ "error": message, "code": code }` with its details. Amounts: `*_base_units` (1 USDC = 10,000,000) and `*_usd`.',
    },
    ...(options.serverUrl ? { servers: [{ url: options.serverUrl }] } : {}),
    tags: TAGS,
  }) as unknown as Record<string, unknown>;
  return withPaymentDiscovery(doc, options);
}
