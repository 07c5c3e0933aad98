import { expect, it } from 'vitest';
import * as client from '../src/index.js';

it('exports exactly the documented runtime API', () => {
  expect(Object.keys(client).sort()).toEqual([
    'ClientError',
    'EndpointVerificationError',
    'GatewayApiError',
    'WEBHOOK_EVENT_TYPES',
    'WEBHOOK_HEADERS',
    'WEBHOOK_SIGNATURE_HEADER',
    'WEBHOOK_TOLERANCE_SECONDS',
    'createChannelPayer',
    'createClient',
    'createDiscoveryClient',
    'createGatewayClient',
    'signWebhookPayload',
    'verifyWebhook',
  ]);
});

it('makes both named errors ClientErrors with their own codes', () => {
  const mismatch = new client.EndpointVerificationError('manifest differs');
  expect(mismatch).toBeInstanceOf(client.ClientError);
  expect(mismatch.code).toBe('ENDPOINT_VERIFICATION');
  expect(mismatch.name).toBe('EndpointVerificationError');
  const api = new client.GatewayApiError(402, 'insufficient balance');
  expect([api.status, api.message, api.code]).toEqual([402, 'insufficient balance', 'GATEWAY_API']);
});

it('refuses bad options at construction, listing every problem, before anything is sent', () => {
  expect(() => client.createClient({ network: 'local', devnetUrl: 'http://127.0.0.1:1', secret: 'nope', platformAddress: 'GBAD', env: {} })).toThrow(
    /secret is not a valid S\.\.\. secret seed; platformAddress must be a G\.\.\. public key/,
  );
  expect(() => client.createGatewayClient({ baseUrl: 'ftp://x' })).toThrow(/http\(s\)/);
});

it("hands the discovery reader's errors on as ClientErrors with the same message (an error answer as GATEWAY_API)", async () => {
  expect(() => client.createDiscoveryClient({ env: {} })).toThrow(client.ClientError);
  expect(() => client.createDiscoveryClient({ url: 'ftp://x', env: {} })).toThrow(/createDiscoveryClient: url must be an http\(s\) URL/);
  const refusing = client.createDiscoveryClient({
    url: 'http://discovery.test',
    env: {},
    fetch: async () => new Response(JSON.stringify({ error: 'q required' }), { status: 400 }),
  });
  const err = await refusing.search('').catch((e: unknown) => e);
  expect(err).toBeInstanceOf(client.ClientError);
  expect(err).toMatchObject({ code: 'GATEWAY_API', message: 'discovery backend: q required', data: { status: 400, serverMessage: 'q required' } });
  const down = client.createDiscoveryClient({
    env: { FAREBOX_DISCOVERY_URL: 'http://discovery.test' },
    fetch: async () => Promise.reject(new Error('connection refused')),
  });
  expect(await down.health().catch((e: unknown) => e)).toMatchObject({ code: 'NETWORK', data: { reason: 'connection refused' } });
});
