import { describe, expect, it } from 'vitest';
import { CREDENTIAL_KINDS, credentialReaches, findOperation, inputs, openApiPath, operationList, operations, schemas, webhooks } from '../src/index.js';

describe('the operation table', () => {
  it('has unique ids and unique method + path pairs, each id its key', () => {
    expect(new Set(operationList.map((o) => o.id)).size).toBe(operationList.length);
    expect(new Set(operationList.map((o) => `${o.method} ${o.path}`)).size).toBe(operationList.length);
    for (const [key, o] of Object.entries(operations)) expect(o.id).toBe(key);
  });

  it('covers every route of the spec, /auth, the operator API and the platform routes', () => {
    const routes = operationList.map((o) => `${o.method} ${o.path}`);
    for (const r of [
      'GET /v1/me',
      'GET /v1/balance',
      'GET /v1/wallet',
      'POST /v1/topup',
      'GET /v1/agents',
      'POST /v1/call',
      'GET /v1/transactions',
      'GET /v1/api-keys',
      'POST /v1/api-keys',
      'DELETE /v1/api-keys/:id',
      'GET /v1/oauth/connections',
      'DELETE /v1/oauth/connections/:id',
      'POST /v1/publisher/activate',
      'GET /v1/publisher/overview',
      'GET /v1/publisher/settlements',
      'GET /v1/publisher/analytics',
      'GET /v1/agents/mine',
      'POST /v1/agents',
      'PUT /v1/agents/:service',
      'DELETE /v1/agents/:service',
      'GET /v1/platform/stats',
      'GET /health',
      'POST /auth/signup',
      'POST /auth/login',
      'POST /auth/logout',
      'GET /v1/platform/key',
      'GET /v1/agents/:service/manifest',
      'POST /v1/disputes',
      'GET /v1/disputes/:escrowId',
      'GET /v1/operator/whoami',
      'GET /v1/operator/treasury',
      'POST /v1/operator/settlements/:id/retry',
    ])
      expect(routes).toContain(r);
  });

  it('lets an OAuth token use exactly the catalog, calls and account reads, each with its scope', () => {
    const oauth = operationList
      .filter((o) => o.auth.kind === 'account' && o.auth.oauthScope)
      .map((o) => `${o.method} ${o.path} ${(o.auth as { oauthScope: string }).oauthScope}`);
    expect(oauth.sort()).toEqual(
      [
        'GET /v1/agents agents:read',
        'GET /v1/agents/:service/manifest agents:read',
        'GET /v1/agents/:service agents:read',
        'GET /v1/agents/:service/health agents:read',
        'POST /v1/call agents:call',
        'GET /v1/me account:read',
        'GET /v1/balance account:read',
        'GET /v1/wallet account:read',
        'GET /v1/transactions account:read',
      ].sort(),
    );
  });

  it('lets only the session and a manage key manage webhooks (never a spend key or an OAuth token)', () => {
    const webhookOps = operationList.filter((o) => o.path.startsWith('/v1/webhooks'));
    expect(webhookOps.map((o) => `${o.method} ${o.path}`).sort()).toEqual(
      [
        'GET /v1/webhooks',
        'POST /v1/webhooks',
        'DELETE /v1/webhooks/:id',
        'POST /v1/webhooks/:id/rotate-secret',
        'POST /v1/webhooks/:id/ping',
        'GET /v1/webhooks/:id/deliveries',
        'POST /v1/webhooks/:id/deliveries/:delivery/redeliver',
      ].sort(),
    );
    for (const o of webhookOps)
      expect(
        CREDENTIAL_KINDS.filter((k) => credentialReaches(o, k)),
        o.id,
      ).toEqual(['session', 'manage_key']);
  });

  it('finds the operation of a request, literal segments before parameters', () => {
    expect(findOperation('GET', '/v1/agents/mine')?.id).toBe('myAgents');
    expect(findOperation('GET', '/v1/agents/echo/manifest')?.id).toBe('agentManifest');
    expect(findOperation('delete', '/v1/agents/echo/')?.id).toBe('removeAgent');
    expect(findOperation('GET', '/v1/agents/')?.id).toBe('listAgents');
    expect(findOperation('POST', '/v1/me')).toBeUndefined();
    expect(findOperation('GET', '/v1/agents/a/b')).toBeUndefined();
    expect(openApiPath('/v1/operator/disputes/:escrowId/resolve')).toBe('/v1/operator/disputes/{escrowId}/resolve');
  });
});

describe('input schemas give the spec messages', () => {
  const first = (r: { success: boolean; error?: { issues: Array<{ message: string }> } }) => (r.success ? 'ok' : r.error!.issues[0]!.message);

  it('POST /v1/call', () => {
    expect(first(inputs.CallBody.safeParse({ payload: {} }))).toBe('service required');
    expect(first(inputs.CallBody.safeParse({ service: 'echo' }))).toBe("payload required (a JSON object: the service's input, {} for none)");
    expect(first(inputs.CallBody.safeParse({ service: 'echo', payload: {}, text: 'hi' }))).toBe(
      "unknown field: text (only service and payload are accepted; put the service's input inside payload)",
    );
    expect(first(inputs.CallBody.safeParse({ service: 'echo', payload: { text: 'hi' } }))).toBe('ok');
    expect(first(inputs.CallBody.safeParse({ service: null, payload: {} }))).toBe('service required');
    expect(first(inputs.CallBody.safeParse({ service: 7, payload: {} }))).toBe('service must be a string');
    expect(first(inputs.CallBody.safeParse({ service: 'x'.repeat(33), payload: {} }))).toBe('service name too long (max 32)');
    for (const payload of ['x', [], null, 3]) expect(first(inputs.CallBody.safeParse({ service: 'echo', payload }))).toBe('payload must be an object');
    for (const body of [[], 'x', null, 3]) expect(first(inputs.CallBody.safeParse(body))).toBe('body must be a JSON object');
  });

  it('service names follow the one policy of @farebox/protocol', () => {
    const invalid = 'invalid service name: use 1 to 32 lower-case letters, digits and single hyphens, starting and ending with a letter or digit';
    const register = (service: unknown) =>
      inputs.RegisterServiceBody.safeParse({ service, pricePerCallLamports: 100, endpoint: 'https://x.example', description: '' });
    for (const bad of ['\u0435cho', 'echo\u200b', 'ECHO', 'echo ', '\u202eohce', 'Qa Y!', 'my_service', 'my.service', 'a--b', '-a', 'a\u0000b']) {
      expect(first(inputs.CallBody.safeParse({ service: bad, payload: {} })), bad).toBe(invalid);
      expect(first(register(bad)), bad).toBe(invalid);
    }
    expect(first(register('fx-convert-2'))).toBe('ok');
    expect(first(register(''))).toBe('service required');
    expect(first(register('x'.repeat(33)))).toBe('service name too long (max 32)');
  });

  it('key and publisher names count characters, not UTF-16 units, and carry no control character', () => {
    expect(first(inputs.NameBody.safeParse({ name: '😀'.repeat(64) }))).toBe('ok');
    expect(first(inputs.NameBody.safeParse({ name: '😀'.repeat(65) }))).toBe('name too long (max 64)');
    expect(first(inputs.NameBody.safeParse({ name: 'ci\tserver' }))).toBe('invalid name: control character U+0009 not allowed');
    expect(first(inputs.NameBody.safeParse({ name: 'ci\ud800' }))).toBe('invalid name: unpaired surrogate U+D800 not allowed');
    expect(first(inputs.OpenDisputeBody.safeParse({ escrowId: 'C\n', proof: 'x' }))).toBe('invalid escrowId: control character U+000A not allowed');
  });

  it('POST /auth/signup and /auth/login: the messages the gateway answers', () => {
    expect(first(inputs.SignupBody.safeParse({ password: 'long enough' }))).toBe('email required');
    expect(first(inputs.SignupBody.safeParse({ email: 'not-an-address', password: 'long enough' }))).toBe('invalid email');
    expect(first(inputs.SignupBody.safeParse({ email: 'a@example.com', password: 'short' }))).toBe('password too short (min 8)');
    expect(first(inputs.SignupBody.safeParse({ email: 'a@example.com', password: 'x'.repeat(257) }))).toBe('password too long (max 256)');
    expect(first(inputs.SignupBody.safeParse({ email: ' a@example.com ', password: 'long enough', next: '/dashboard' }))).toBe('ok');
    expect(first(inputs.LoginBody.safeParse({ email: 'a@example.com' }))).toBe('password required');
    expect(first(inputs.LoginBody.safeParse({ email: 'a@example.com', password: 'short' }))).toBe('ok');
  });

  it('POST /v1/topup, POST /v1/api-keys and the limit query', () => {
    for (const amount of [0, -1, 1000.01, '5']) expect(first(inputs.TopupBody.safeParse({ amount }))).toBe('invalid amount (must be 0 < n <= 1000)');
    expect(first(inputs.TopupBody.safeParse({ amount: 1000 }))).toBe('ok');
    expect(first(inputs.NameBody.safeParse({}))).toBe('name required');
    expect(first(inputs.NameBody.safeParse({ name: 'x'.repeat(65) }))).toBe('name too long (max 64)');
    const limit = inputs.intQuery('limit', 1, 500, 50);
    for (const v of ['0', '501', 'abc', '1.5', ' 5']) expect(first(limit.safeParse(v))).toBe('invalid limit (must be 1 <= n <= 500)');
    for (const v of [undefined, '', '1', '500']) expect(first(limit.safeParse(v))).toBe('ok');
  });

  it('output schemas accept what the spec shows and strip what they do not know', () => {
    const balance = {
      asset: 'USDC',
      base_unit_name: 'stroops',
      wallet_status: 'ok',
      ...Object.fromEntries(
        ['balance', 'wallet', 'total'].flatMap((p) => ['base_units', 'lamports', 'asset_amount', 'sol', 'usd'].map((s) => [`${p}_${s}`, 1])),
      ),
    };
    expect(schemas.Balance.parse({ ...balance, newer_field: 1 })).toEqual(balance);
    expect(schemas.Balance.safeParse({ ...balance, wallet_status: undefined }).success).toBe(false);
  });
});

describe("webhook bodies give the gateway's messages", () => {
  const first = (r: { success: boolean; error?: { issues: Array<{ message: string }> } }) => (r.success ? 'ok' : r.error!.issues[0]!.message);
  const create = (b: unknown) => first(webhooks.CreateWebhookBody.safeParse(b));
  it('names the first problem of a registration', () => {
    const all = 'topup.completed, settlement.released, settlement.failed, dispute.opened, dispute.resolved, service.health_changed, budget.threshold_reached';
    expect(create({ url: 'https://hooks.example/farebox', events: ['topup.completed'] })).toBe('ok');
    expect(create({ events: ['topup.completed'] })).toBe('url required');
    expect(create({ url: '', events: ['topup.completed'] })).toBe('url required');
    expect(create({ url: `https://hooks.example/${'a'.repeat(2048)}`, events: ['topup.completed'] })).toBe('url too long (max 2048)');
    expect(create({ url: 'https://hooks.example/' })).toBe(`events required: a list of one or more of ${all}`);
    expect(create({ url: 'https://hooks.example/', events: [] })).toBe(`events required: a list of one or more of ${all}`);
    expect(create({ url: 'https://hooks.example/', events: 'topup.completed' })).toBe(`events required: a list of one or more of ${all}`);
    expect(create({ url: 'https://hooks.example/', events: ['topup.complete'] })).toBe(`unknown event type: topup.complete (one of ${all})`);
    expect(create({ url: 'https://hooks.example/', events: ['topup.completed'], secret: 'mine' })).toBe('unknown field: secret');
    const rotate = (b: unknown) => first(webhooks.RotateWebhookSecretBody.safeParse(b));
    expect(rotate({})).toBe('ok');
    expect(rotate({ expire_previous_in_hours: 24 })).toBe('ok');
    for (const bad of [-1, 169, 1.5, '24'])
      expect(rotate({ expire_previous_in_hours: bad })).toBe('expire_previous_in_hours must be a whole number from 0 to 168');
  });
});
