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

/**
 * The OpenAPI 3.1 document of the gateway's REST API, generated from the
 * operation table of `@farebox/contract` by `@asteasolutions/zod-to-openapi`.
 * Served at `GET /openapi.json`; `docs/openapi.json` is a copy (a test keeps it
 * up to date).
 */
export function openApiDocument(options: { serverUrl?: string; version?: string } = {}): Record<string, unknown> {
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
  return generator.generateDocument({
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
}
