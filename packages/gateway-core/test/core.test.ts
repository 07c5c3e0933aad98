// Platform-signed calls, free top-ups, OAuth (codes, tokens, the daily
// spending limit), sessions and the hold reaper, with createGateway in this
// process (PGlite in memory, the devnet on a loopback port, services on
// loopback ports) and a clock the test moves. (Paid top-ups, the wallet path
// and settlement: payments.test.ts.)
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CERTIFICATE_HEADER, splitFee } from '@farebox/protocol';
import { eventually } from '@farebox/test-kit';
import { certificateClaims, startCoreStack, type CoreStack, type CoreUser } from './core-kit.js';

const SIGNUP_CREDIT = 50_000_000n;

let s: CoreStack;
/** A service that answers `{"ok":true}` and keeps the headers of every request. */
let raw: Server;
const seen: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  s = await startCoreStack();
  raw = createServer((req, res) => {
    seen.push(req.headers);
    req.resume().on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
  });
  await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
  await s.registerRaw('raw-core', `http://127.0.0.1:${(raw.address() as AddressInfo).port}/`, '0.01');
}, 60_000);
afterAll(async () => {
  await new Promise((r) => raw?.close(r));
  await s?.close();
});

describe('a platform-signed call', () => {
  it('charges exactly the price, records the publisher its earning, and answers the service’s result', async () => {
    const { owner } = await s.publish('echo-core', '0.0123457');
    const u = await s.user();
    const answer = await s.core.calls.call(u.principal, { service: 'echo-core', payload: { hello: 'core' } });
    expect(answer.status).toBe(200);
    expect(answer.value).toMatchObject({
      result: { echo: { hello: 'core' } },
      paidWith: 'credit',
      mode: 'platform-signed',
      cost: { base_units: 123_457 },
      newBalance: { base_units: Number(SIGNUP_CREDIT - 123_457n) },
    });
    // The JSON text the host sends carries the same answer.
    expect(JSON.parse(answer.json)).toEqual(JSON.parse(JSON.stringify(answer.value)));
    expect(await s.credits(u)).toBe(SIGNUP_CREDIT - 123_457n);
    const { rows } = await s.core.db.query<{ gross: string; fee: string; net: string; publisher_owner: string }>(
      'SELECT gross, fee, net, publisher_owner FROM earnings WHERE payer_account_id = $1',
      [u.user.id],
    );
    const { fee, net } = splitFee(123_457n);
    expect(rows).toEqual([{ gross: '123457', fee: fee.toString(), net: net.toString(), publisher_owner: owner }]);
    expect((await s.core.ledger.verify()).ok).toBe(true);
  });

  it('sends the service a certificate for the price over the exact body, issued by the platform key at the gateway’s time', async () => {
    const u = await s.user();
    seen.length = 0;
    const at = Math.floor(s.clock.now() / 1000);
    const answer = await s.core.calls.call(u.principal, { service: 'raw-core', payload: { q: 1 } });
    expect(answer.status).toBe(200);
    expect(seen).toHaveLength(1);
    const claims = certificateClaims(seen[0]![CERTIFICATE_HEADER]);
    expect(claims).toMatchObject({ svc: 'raw-core', amt: '100000', cid: (answer.value as { callId: string }).callId });
    expect(claims.iat).toBeGreaterThanOrEqual(at);
    expect(claims.iat).toBeLessThanOrEqual(Math.floor(s.clock.now() / 1000));
    expect(seen[0]!['farebox-call-id']).toBe(claims.cid);
  });

  it('refunds a call the service fails, and says why', async () => {
    await s.publish('fails-core', '0.02', () => {
      throw new Error('upstream broke');
    });
    const u = await s.user();
    const answer = await s.core.calls.call(u.principal, { service: 'fails-core', payload: {} });
    expect(answer.status).toBe(500);
    expect(answer.value).toMatchObject({ error: expect.stringMatching(/^service error 500.*; the 0\.02 USD charge was refunded to your credits$/) });
    expect((answer.value as { trace: { steps: Array<{ name: string }> } }).trace.steps.map((x) => x.name)).toEqual([
      'resolve_service',
      'hold_credits',
      'call_service',
      'refund',
    ]);
    expect(await s.credits(u)).toBe(SIGNUP_CREDIT);
    const { rows } = await s.core.db.query<{ state: string }>('SELECT state FROM holds WHERE account_id = $1', [u.user.id]);
    expect(rows).toEqual([{ state: 'voided' }]);
  });

  it('refuses an unknown service, a bad body and a price the credits do not cover before anything is charged', async () => {
    const u = await s.user();
    await expect(s.core.calls.call(u.principal, { service: 'nobody-here', payload: {} })).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: 'service not found',
    });
    await expect(s.core.calls.call(u.principal, { service: 'echo-core', payload: {}, extra: 1 })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    await s.publish('dear-core', '6');
    // No USDC in the wallet either: nothing pays for it.
    await expect(s.core.calls.call(u.principal, { service: 'dear-core', payload: {} })).rejects.toMatchObject({
      code: 'INSUFFICIENT_BALANCE',
      message: 'insufficient balance',
    });
    expect(await s.credits(u)).toBe(SIGNUP_CREDIT);
    expect((await s.core.db.query('SELECT 1 FROM holds WHERE account_id = $1', [u.user.id])).rows).toEqual([]);
  });

  it('runs a call once per Idempotency-Key: the retry gets the first answer, and is charged once', async () => {
    const u = await s.user();
    const first = await s.core.calls.call(u.principal, { service: 'echo-core', payload: { n: 1 } }, { idempotencyKey: 'k-1' });
    const retry = await s.core.calls.call(u.principal, { service: 'echo-core', payload: { n: 1 } }, { idempotencyKey: 'k-1' });
    expect(retry.json).toBe(first.json);
    expect(await s.credits(u)).toBe(SIGNUP_CREDIT - 123_457n);
    await expect(s.core.calls.call(u.principal, { service: 'echo-core', payload: { n: 2 } }, { idempotencyKey: 'k-1' })).rejects.toMatchObject({
      code: 'CONFLICT',
    });
  });

  it('signs a new certificate when the hold took 5 s or more by the gateway’s clock, and charges once', async () => {
    const u = await s.user();
    seen.length = 0;
    // The database's one connection (PGlite) is the test's: the call's hold waits for it.
    const blocker = await s.core.db.pool.connect();
    let movedAt = 0;
    let answer;
    try {
      await blocker.query('BEGIN');
      const waiting = s.core.db.pool.waitingCount;
      const call = s.core.calls.call(u.principal, { service: 'raw-core', payload: { q: 'slow' } });
      await eventually('the call waits for its hold', () => s.core.db.pool.waitingCount > waiting);
      s.clock.advance(5_500);
      movedAt = s.clock.now();
      await blocker.query('COMMIT');
      blocker.release();
      answer = await call;
    } catch (err) {
      blocker.release();
      throw err;
    }
    expect(answer.status).toBe(200);
    const steps = (answer.value as { trace: { steps: Array<{ name: string; startedAt: string }> } }).trace.steps;
    // The hold (and the certificate signed with it) started before the clock moved...
    expect(Date.parse(steps.find((x) => x.name === 'hold_credits')!.startedAt)).toBeLessThan(movedAt - 5_000);
    // ...and the service got one signed after it.
    expect(seen).toHaveLength(1);
    const claims = certificateClaims(seen[0]![CERTIFICATE_HEADER]);
    expect(claims.iat).toBeGreaterThanOrEqual(Math.floor(movedAt / 1000));
    expect(claims.cid).toBe((answer.value as { callId: string }).callId);
    expect(await s.credits(u)).toBe(SIGNUP_CREDIT - 100_000n);
  });
});

describe('free top-ups (the local network)', () => {
  it('are unpaid credits marked as such, once per Idempotency-Key', async () => {
    const u = await s.user();
    expect(s.core.platform.key().topups).toBe('free');
    const first = await s.core.account.topup(u.user, { amount: 7 }, 'free-once');
    expect(first).toMatchObject({
      balance_base_units: Number(SIGNUP_CREDIT) + 70_000_000,
      topup: { status: 'completed', amount_base_units: 70_000_000, paid_with: null, note: 'free' },
    });
    expect(await s.core.account.topup(u.user, { amount: 7 }, 'free-once')).toEqual(first);
    await expect(s.core.account.topup(u.user, { amount: 8 }, 'free-once')).rejects.toMatchObject({
      code: 'CONFLICT',
      message: 'idempotency key reused with a different request',
    });
    await expect(s.core.account.topup(u.user, { amount: 0 })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    expect(await s.credits(u)).toBe(SIGNUP_CREDIT + 70_000_000n);
    const topups = (await s.core.account.transactions(u.user, 50)).filter((t) => t.type === 'topup' && t.note !== 'signup');
    expect(topups).toHaveLength(1);
  });
});

describe('OAuth, by the gateway’s clock', () => {
  const DAY = 24 * 3600_000;
  const redirectUri = 'http://127.0.0.1:9/callback';

  /** A public client (PKCE) the user authorizes: the code's redirect, as the consent screen's Allow gives it. */
  async function authorize(u: CoreUser, dailyLimitUsd = '') {
    const client = await s.core.oauth.register({ client_name: 'Core assistant', redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' });
    const verifier = randomBytes(32).toString('base64url');
    const check = await s.core.oauth.checkAuthorization({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: redirectUri,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      state: 'st-1',
      resource: s.core.oauth.resource,
    });
    if (check.kind !== 'ok') throw new Error(`authorization refused: ${JSON.stringify(check)}`);
    const redirect = new URL(await s.core.oauth.approve(u.user, check.request, { limit_usd: dailyLimitUsd, limit_period: 'day' }));
    const code = redirect.searchParams.get('code')!;
    const exchange = () =>
      s.core.oauth.token(
        { grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier, client_id: client.client_id },
        undefined,
      );
    return { client, redirect, exchange };
  }

  it('issues tokens for a code once; the token is the user’s principal with the granted scopes', async () => {
    const u = await s.user();
    const { redirect, exchange } = await authorize(u);
    expect(redirect.searchParams.get('state')).toBe('st-1');
    const tokens = await exchange();
    expect(tokens).toMatchObject({ token_type: 'Bearer', expires_in: 30 * 24 * 3600, scope: 'agents:read agents:call account:read' });
    expect(await s.core.authenticateBearer(tokens.access_token)).toMatchObject({
      via: 'oauth',
      user: { id: u.user.id },
      scopes: ['agents:read', 'agents:call', 'account:read'],
    });
    await expect(exchange()).rejects.toMatchObject({ data: { oauthError: 'invalid_grant' } });
  });

  it('refuses a code older than 2 minutes', async () => {
    const u = await s.user();
    const { exchange } = await authorize(u);
    s.clock.advance(120_001);
    await expect(exchange()).rejects.toMatchObject({ message: 'authorization code expired', data: { oauthError: 'invalid_grant' } });
  });

  it('ends an access token after 30 days; its refresh token renews it', async () => {
    const u = await s.user();
    const { client, exchange } = await authorize(u);
    const tokens = await exchange();
    expect(await s.core.authenticateBearer(tokens.access_token)).toMatchObject({ via: 'oauth' });
    s.clock.advance(30 * DAY + 1_000);
    expect(await s.core.authenticateBearer(tokens.access_token)).toBeUndefined();
    const renewed = await s.core.oauth.token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id }, undefined);
    expect(renewed.refresh_token).not.toBe(tokens.refresh_token);
    expect(await s.core.authenticateBearer(renewed.access_token)).toMatchObject({ via: 'oauth', user: { id: u.user.id } });
  });

  it('holds a connection to its daily limit (UTC day) before anything is charged, and starts from zero the next day', async () => {
    await s.publish('oauth-echo', '0.01');
    const u = await s.user();
    const tokens = await (await authorize(u, '0.015')).exchange();
    const principal = (await s.core.authenticateBearer(tokens.access_token))!;
    const call = (n: number) => s.core.calls.call(principal, { service: 'oauth-echo', payload: { n } });
    expect((await call(1)).status).toBe(200);
    const midnight = new Date(Math.floor(s.clock.now() / DAY) * DAY + DAY).toISOString();
    await expect(call(2)).rejects.toMatchObject({
      code: 'SPENDING_LIMIT',
      message: `spending limit reached: this connection may spend $0.015 per day (UTC); $0.005 is left until ${midnight} and this call costs $0.01`,
      data: { limit_source: 'connection', limit_usd: 0.015, remaining_usd: 0.005, resets_at: midnight },
    });
    expect(await s.credits(u)).toBe(SIGNUP_CREDIT - 100_000n);
    expect((await s.core.oauthConnections.list(u.user.id))[0]).toMatchObject({ daily_limit_base_units: 150_000, spent_today_base_units: 100_000 });
    // The account's API key is not held to the connection's limit.
    expect((await s.core.calls.call(u.principal, { service: 'oauth-echo', payload: {} })).status).toBe(200);
    s.clock.advance(DAY);
    expect((await call(3)).status).toBe(200);
    expect((await s.core.oauthConnections.list(u.user.id))[0]).toMatchObject({ spent_today_base_units: 100_000 });
    expect(await s.credits(u)).toBe(SIGNUP_CREDIT - 300_000n);
  });

  it('disconnecting an app stops its tokens at once', async () => {
    const u = await s.user();
    const tokens = await (await authorize(u)).exchange();
    const [connection] = await s.core.oauthConnections.list(u.user.id);
    await s.core.oauthConnections.revoke(u.user.id, connection!.id);
    expect(await s.core.authenticateBearer(tokens.access_token)).toBeUndefined();
    await expect(
      s.core.oauth.token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: connection!.client_id }, undefined),
    ).rejects.toMatchObject({ data: { oauthError: 'invalid_grant' } });
  });
});

// These move the clock forward for good: they come last.
describe('time, by the gateway’s clock', () => {
  it('the reaper returns a hold left behind (a crash mid-call) once it is past its timeout, not before', async () => {
    const u = await s.user();
    const { hold } = await s.core.ledger.hold(u.user.id, 1_000_000n, { callId: 'crashed-call', service: 'echo-core', timeoutMs: s.core.config.holdTimeoutMs });
    expect(await s.credits(u)).toBe(SIGNUP_CREDIT - 1_000_000n);
    expect((await s.core.reapExpiredHolds()).voided).not.toContain(hold.id);
    s.clock.advance(s.core.config.holdTimeoutMs + 1_000);
    expect((await s.core.reapExpiredHolds()).voided).toContain(hold.id);
    expect(await s.credits(u)).toBe(SIGNUP_CREDIT);
    expect((await s.core.ledger.verify()).ok).toBe(true);
  });

  it('a session ends after 30 days; the account’s API key goes on working', async () => {
    const u = await s.user();
    expect(await s.core.accounts.fromSession(u.session)).toMatchObject({ via: 'session', user: { id: u.user.id } });
    s.clock.advance(30 * 24 * 3600_000 + 1_000);
    expect(await s.core.accounts.fromSession(u.session)).toBeUndefined();
    expect(await s.core.authenticateBearer(u.key)).toMatchObject({ via: 'api_key', user: { id: u.user.id } });
    // A call still works at the new time: the certificate is current for a service on the same clock.
    const answer = await s.core.calls.call(u.principal, { service: 'echo-core', payload: { later: true } });
    expect(answer.status).toBe(200);
  });
});
