import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitFee } from '@farebox/protocol';
import { grantOperator, revokeOperator } from '@farebox/gateway-core';
import { checkResponses, recordResponses } from './contract-kit.js';
import { startStack, type Stack } from './settlement-kit.js';
import { USDC, fundedNotServed, newCaller } from './dispute-kit.js';

// Automatic policy off: every dispute waits for an operator.
const OPERATOR = 'ops@farebox.test';
let s: Stack;
let down: { owner: string };
type Api = (path: string, init?: { method?: string; body?: unknown }) => Promise<{ status: number; body: any }>;
let op: Api;
let other: Api;
let otherEmail: string;

async function account(email: string): Promise<Api> {
  const res = await fetch(`${s.url}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: 'correct horse battery' }),
  });
  const signup = (await res.json()) as { csrf_token: string };
  const cookie = (res.headers.getSetCookie?.() ?? []).map((c) => c.split(';')[0]).join('; ');
  const created = await s.request('/v1/api-keys', { body: { name: 'ops' }, headers: { cookie, 'x-csrf-token': signup.csrf_token } });
  const key = created.body.key as string;
  return (path, init = {}) => s.request(path, { ...init, headers: { authorization: `Bearer ${key}` } });
}

beforeAll(async () => {
  s = await startStack({ env: { FAREBOX_DISPUTE_AUTO_REFUND_MINUTES: 'off' } });
  down = await s.publish('ops-down', '0.5', () => {
    throw new Error('upstream down');
  });
  op = await account(OPERATOR);
  // The operator signs up first, then gets the role by account id (what `farebox operator grant` stores).
  await grantOperator(s.gw.core.db, (await op('/v1/me')).body.id, 'cli:test');
  otherEmail = `someone${process.pid}@farebox.test`;
  other = await account(otherEmail);
}, 60_000);
// Every answer the operator suite gets from the gateway, checked against the contract at the end.
const recorder = recordResponses(
  () => s?.url,
  () => expect.getState().currentTestName,
);

afterAll(async () => {
  recorder.stop();
  await s?.close();
});

describe('operator: disputes', () => {
  it('keeps a dispute open for an operator when the automatic policy is off, and the operator refunds it in full', async () => {
    const caller = await newCaller(s, 5n * USDC);
    const start = await s.usdc(caller.publicKey);
    const escrowId = await fundedNotServed(caller, 'ops-down');
    const opened = await caller.client.dispute(escrowId, { reason: 'never answered' });
    expect(opened).toMatchObject({ state: 'open' });
    expect(await caller.client.getEscrow(escrowId)).toMatchObject({ balance: 5_000_000n, flags: { disputed: true, resolved: false } });

    const list = await op('/v1/operator/disputes');
    expect(list.status).toBe(200);
    expect(list.body.find((d: any) => d.escrow_id === escrowId)).toMatchObject({
      state: 'open',
      served: false,
      reason: 'never answered',
      requested_by: caller.publicKey,
      receiver: down.owner,
      amount_base_units: 5_000_000,
    });

    const done = await op(`/v1/operator/disputes/${escrowId}/resolve`, { body: { action: 'refund' } });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({
      state: 'resolved',
      resolution: 'refund',
      resolved_by: OPERATOR,
      distributions: [{ address: caller.publicKey, base_units: 5_000_000 }],
    });
    expect(await s.usdc(caller.publicKey)).toBe(start);
    const again = await op(`/v1/operator/disputes/${escrowId}/resolve`, { body: { action: 'refund' } });
    expect(again).toMatchObject({ status: 409, body: { error: 'dispute already resolved' } });
    expect(await s.usdc(caller.publicKey)).toBe(start);
  });

  it('pays a split resolution exactly as distributed, and refuses a split that does not sum to the balance', async () => {
    const caller = await newCaller(s, 5n * USDC);
    const escrowId = await fundedNotServed(caller, 'ops-down');
    await caller.client.dispute(escrowId);
    const before = { caller: await s.usdc(caller.publicKey), owner: await s.usdc(down.owner), treasury: await s.usdc(s.gw.core.treasuryAddress) };

    const wrong = await op(`/v1/operator/disputes/${escrowId}/resolve`, {
      body: { action: 'split', payer_base_units: '2000001', receiver_base_units: 3_000_000 },
    });
    expect(wrong).toMatchObject({
      status: 400,
      body: { error: 'the split must sum exactly to the escrow balance: 2000001 + 3000000 = 5000001 base units, the balance is 5000000' },
    });
    expect(await caller.client.getEscrow(escrowId)).toMatchObject({ balance: 5_000_000n, flags: { disputed: true } });

    const split = await op(`/v1/operator/disputes/${escrowId}/resolve`, {
      body: { action: 'split', payer_base_units: '1999999', receiver_base_units: 3_000_001 },
    });
    expect(split.status).toBe(200);
    expect(split.body).toMatchObject({
      resolution: 'split',
      distributions: [
        { address: caller.publicKey, base_units: 1_999_999 },
        { address: down.owner, base_units: 3_000_001 },
      ],
    });
    expect(await s.usdc(caller.publicKey)).toBe(before.caller + 1_999_999n);
    expect(await s.usdc(down.owner)).toBe(before.owner + 3_000_001n);
    expect(await s.usdc(s.gw.core.treasuryAddress)).toBe(before.treasury);
    expect(await caller.client.getEscrow(escrowId)).toMatchObject({ balance: 0n, flags: { resolved: true } });
    expect(await caller.client.getDispute(escrowId)).toMatchObject({ state: 'resolved', resolution: 'split' });
  });

  it('refuses a non-operator (403) on every operator endpoint, moves nothing, and audits the attempt', async () => {
    const caller = await newCaller(s, 5n * USDC);
    const escrowId = await fundedNotServed(caller, 'ops-down');
    await caller.client.dispute(escrowId);
    const balance = await s.usdc(caller.publicKey);

    const refused = await other(`/v1/operator/disputes/${escrowId}/resolve`, { body: { action: 'refund' } });
    expect(refused).toMatchObject({ status: 403, body: { error: 'operator role required' } });
    for (const path of ['/v1/operator/disputes', '/v1/operator/treasury', '/v1/operator/settlements', '/v1/operator/revenue', '/v1/operator/audit']) {
      expect((await other(path)).status).toBe(403);
    }
    expect(await other('/v1/operator/whoami')).toMatchObject({ status: 200, body: { operator: false } });
    expect(await s.usdc(caller.publicKey)).toBe(balance);
    expect(await caller.client.getEscrow(escrowId)).toMatchObject({ balance: 5_000_000n, flags: { disputed: true, resolved: false } });

    const audit = await op('/v1/operator/audit?limit=50');
    expect(audit.status).toBe(200);
    expect(audit.body.find((e: any) => e.action === 'dispute.resolve' && e.target === escrowId)).toMatchObject({ actor: otherEmail, outcome: 'denied' });
    expect(audit.body.some((e: any) => e.action === 'dispute.resolve' && e.outcome === 'ok' && e.actor === OPERATOR)).toBe(true);
    expect(audit.body.some((e: any) => e.action === 'dispute.open' && e.actor === `funder:${caller.publicKey}`)).toBe(true);
  });

  it('keeps the audit log append-only: the database refuses to change or delete a line', async () => {
    const db = s.gw.core.db;
    await expect(db.query(`UPDATE gw_audit_log SET actor = 'someone else'`)).rejects.toThrow(/append-only/);
    await expect(db.query('DELETE FROM gw_audit_log')).rejects.toThrow(/append-only/);
    await expect(db.query('TRUNCATE gw_audit_log')).rejects.toThrow(/append-only/);
  });

  it('grants the role through the database (the CLI path), never through the API', async () => {
    const email = `late${process.pid}@farebox.test`;
    const late = await account(email);
    expect((await late('/v1/operator/treasury')).status).toBe(403);
    await grantOperator(s.gw.core.db, email, 'cli:test');
    expect((await late('/v1/operator/treasury')).status).toBe(200);
    expect(await late('/v1/operator/whoami')).toMatchObject({ body: { operator: true } });
  });
});

describe('the operator role cannot be claimed', () => {
  const OPERATOR_ROUTES: Array<[string, { method?: string; body?: unknown }?]> = [
    ['/v1/operator/disputes'],
    ['/v1/operator/treasury'],
    ['/v1/operator/settlements'],
    ['/v1/operator/revenue'],
    ['/v1/operator/audit'],
    ['/v1/operator/disputes/CDLZFC3SYJYDZT7K67VZ75HPJVIEUVNIXF47ZG2FB2RMQQVU2HHGCYSC/resolve', { body: { action: 'refund' } }],
    ['/v1/operator/settlements/1/retry', { method: 'POST' }],
  ];
  const deniedFor = async (actor: string) =>
    (await s.gw.core.db.query<{ action: string; outcome: string }>(`SELECT action, outcome FROM gw_audit_log WHERE actor = $1 ORDER BY id`, [actor])).rows;

  it('refuses to start when FAREBOX_OPERATORS names e-mail addresses (or anything but account ids), naming each with every other problem, before opening anything', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'farebox-ops-conf-'));
    const err = await startStack({
      devnet: s.devnet,
      dataDir,
      env: { FAREBOX_OPERATORS: 'ops@example.com, OPS2@example.com acct_x', FAREBOX_METRICS_TOKEN: 'short' },
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'ConfigError' });
    expect((err as { problems: string[] }).problems).toEqual([
      'FAREBOX_METRICS_TOKEN must be at least 16 characters',
      'FAREBOX_OPERATORS: "ops@example.com" is an e-mail address; operators are named by account id (acct_…, the id of /v1/me), or granted with `farebox operator grant` once they have an account',
      'FAREBOX_OPERATORS: "OPS2@example.com" is an e-mail address; operators are named by account id (acct_…, the id of /v1/me), or granted with `farebox operator grant` once they have an account',
      'FAREBOX_OPERATORS: "acct_x" is not an account id (acct_…)',
    ]);
    expect((err as Error).message).toContain('"ops@example.com" is an e-mail address');
    // Refused at start: no database was opened, so nobody could sign up with that address.
    expect(existsSync(join(dataDir, 'db'))).toBe(false);
  });

  it('refuses a grant to an address with no account, so signing up with it later (any case) gives no role: 403 on every operator route, each audited as denied', async () => {
    const email = `future-ops${process.pid}@farebox.test`;
    const grant = await grantOperator(s.gw.core.db, email, 'cli:test').then(
      () => 'granted',
      (e: unknown) => (e as Error).message,
    );
    const claimer = await account(email.toUpperCase());
    for (const [path, init] of OPERATOR_ROUTES) {
      expect(await claimer(path, init), path).toMatchObject({ status: 403, body: { error: 'operator role required' } });
    }
    expect(await claimer('/v1/operator/whoami')).toMatchObject({ status: 200, body: { operator: false } });
    expect(await deniedFor(email.toUpperCase())).toEqual(
      ['dispute.list', 'treasury.view', 'settlement.list', 'revenue.view', 'audit.view', 'dispute.resolve', 'settlement.retry'].map((action) => ({
        action,
        outcome: 'denied',
      })),
    );
    // The grant was refused with the reason, and only the refusal was kept.
    expect(grant).toBe(`no account "${email}": the operator signs up first, then gets the role (it is never granted to an address with no account)`);
    expect(
      (await s.gw.core.db.query(`SELECT g.account_id FROM gw_operator_grants g JOIN gw_users u ON u.id = g.account_id WHERE u.email_normalized = $1`, [email]))
        .rows,
    ).toEqual([]);
    expect((await s.gw.core.db.query(`SELECT target, outcome FROM gw_audit_log WHERE action = 'operator.grant' AND target = $1`, [email])).rows).toEqual([
      { target: email, outcome: 'failed' },
    ]);
  });

  it('grants it by account id from configuration, to that account only', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'farebox-ops-id-'));
    let st = await startStack({ devnet: s.devnet, dataDir });
    const u = await st.user();
    const stranger = await st.user();
    await st.gw.close();
    st = await startStack({ devnet: s.devnet, dataDir, env: { FAREBOX_OPERATORS: `${u.id}` } });
    try {
      const as = (key: string, path: string) => st.request(path, { headers: { authorization: `Bearer ${key}` } });
      expect((await as(u.key, '/v1/operator/whoami')).body).toMatchObject({ operator: true });
      expect((await as(u.key, '/v1/operator/treasury')).status).toBe(200);
      expect(await as(stranger.key, '/v1/operator/treasury')).toMatchObject({ status: 403, body: { error: 'operator role required' } });
      expect((await as(stranger.key, '/v1/operator/whoami')).body).toMatchObject({ operator: false });
      expect((await st.gw.core.db.query(`SELECT actor_id, action, outcome FROM gw_audit_log WHERE outcome = 'denied'`)).rows).toEqual([
        { actor_id: stranger.id, action: 'treasury.view', outcome: 'denied' },
      ]);
    } finally {
      await st.gw.close();
    }
  }, 60_000);

  it('moves e-mail grants of an older database to the accounts that own the address, and drops the rest: a later sign-up with a dropped address (any case) gets nothing', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'farebox-ops-migrate-'));
    let st = await startStack({ devnet: s.devnet, dataDir });
    const owner = await st.user();
    const ownerEmail = (await owner.api('/v1/me')).body.email as string;
    const unclaimed = `claim-me${process.pid}@farebox.test`;
    // The database as schema 6 left it: operators granted by e-mail, one with no account yet.
    const gwMigrations = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..', 'packages', 'gateway-core', 'migrations');
    const schema4 = readFileSync(join(gwMigrations, '0004_operator.sql'), 'utf8');
    const createOld = /CREATE TABLE gw_operators \([^;]*\);/.exec(schema4)![0];
    await st.gw.core.db.query('DROP TABLE gw_operator_grants');
    await st.gw.core.db.query(createOld);
    await st.gw.core.db.query(`INSERT INTO gw_operators (email_normalized, granted_by) VALUES ($1, 'cli:old'), ($2, 'cli:old')`, [
      ownerEmail.toLowerCase(),
      unclaimed,
    ]);
    await st.gw.core.db.query(`DELETE FROM farebox_migrations WHERE namespace = 'gateway' AND version = 7`);
    await st.gw.close();

    st = await startStack({ devnet: s.devnet, dataDir });
    try {
      const as = (key: string, path: string) => st.request(path, { headers: { authorization: `Bearer ${key}` } });
      expect((await st.gw.core.db.query(`SELECT account_id, granted_by FROM gw_operator_grants`)).rows).toEqual([
        { account_id: owner.id, granted_by: 'cli:old' },
      ]);
      expect((await as(owner.key, '/v1/operator/whoami')).body).toMatchObject({ operator: true });
      expect((await as(owner.key, '/v1/operator/treasury')).status).toBe(200);

      const res = await fetch(`${st.url}/auth/signup`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: unclaimed.toUpperCase(), password: 'correct horse battery' }),
      });
      expect(res.status).toBe(201);
      const signup = (await res.json()) as { csrf_token: string };
      const cookie = (res.headers.getSetCookie?.() ?? []).map((c) => c.split(';')[0]).join('; ');
      const claimer = await st.request('/v1/operator/treasury', { headers: { cookie } });
      expect(claimer).toMatchObject({ status: 403, body: { error: 'operator role required' } });
      const resolve = await st.request('/v1/operator/disputes/CDLZFC3SYJYDZT7K67VZ75HPJVIEUVNIXF47ZG2FB2RMQQVU2HHGCYSC/resolve', {
        body: { action: 'refund' },
        headers: { cookie, 'x-csrf-token': signup.csrf_token },
      });
      expect(resolve).toMatchObject({ status: 403, body: { error: 'operator role required' } });
      expect((await st.gw.core.db.query(`SELECT action, outcome FROM gw_audit_log WHERE actor = $1 ORDER BY id`, [unclaimed.toUpperCase()])).rows).toEqual([
        { action: 'treasury.view', outcome: 'denied' },
        { action: 'dispute.resolve', outcome: 'denied' },
      ]);
    } finally {
      await st.gw.close();
    }
  }, 60_000);

  it('takes the role back by account id (the CLI revoke path), at once', async () => {
    const email = `revoked${process.pid}@farebox.test`;
    const api = await account(email);
    const id = (await api('/v1/me')).body.id as string;
    expect(await grantOperator(s.gw.core.db, id, 'cli:test')).toEqual({ account_id: id, email, granted: true });
    expect((await api('/v1/operator/treasury')).status).toBe(200);
    expect(await revokeOperator(s.gw.core.db, id, 'cli:test')).toEqual({ account_id: id, email, revoked: true });
    expect(await api('/v1/operator/treasury')).toMatchObject({ status: 403, body: { error: 'operator role required' } });
    expect(
      (await s.gw.core.db.query(`SELECT action, outcome FROM gw_audit_log WHERE target = $1 AND action LIKE 'operator.%' ORDER BY id`, [id])).rows,
    ).toEqual([
      { action: 'operator.grant', outcome: 'ok' },
      { action: 'operator.revoke', outcome: 'ok' },
    ]);
  });
});

describe('operator: treasury, settlements and revenue', () => {
  it('shows the treasury balance and what it owes exactly as the devnet holds them, through a run of calls, funding and settlement', async () => {
    const pub = await s.publish('ops-svc', '0.0123457');
    const users = await Promise.all([s.user({ topup: 10 }), s.user({ topup: 10 })]);
    const treasury = s.gw.core.treasuryAddress;
    await s.gw.core.settlement.ensureTreasuryFunds(1_000n * USDC);
    const engine = s.gw.core.settlement.engine!;
    const view = async () => (await op('/v1/operator/treasury')).body;
    const start = await s.usdc(treasury);
    const startView = await view();
    expect(startView.balance.base_units).toBe(start.toString());

    for (let i = 0; i < 12; i++) expect((await users[i % 2]!.api('/v1/call', { body: { service: 'ops-svc', payload: { i } } })).status).toBe(200);
    const gross = 12n * 123_457n;
    const perCallNet = 12n * splitFee(123_457n).net;
    let v = await view();
    const mine = (x: any) => x.publishers.find((p: any) => p.owner === pub.owner);
    expect(mine(v)).toMatchObject({
      calls: 12,
      owed: { base_units: perCallNet.toString() },
      to_fund: { base_units: gross.toString() },
      in_escrow: { base_units: '0' },
    });
    expect(v.balance.base_units).toBe((await s.usdc(treasury)).toString());

    await engine.tick(); // funds the batch into the cycle's escrow
    v = await view();
    const now = await s.usdc(treasury);
    expect(now).toBe(start - gross);
    expect(v.balance.base_units).toBe(now.toString());
    expect(mine(v)).toMatchObject({ to_fund: { base_units: '0' }, in_escrow: { base_units: gross.toString() } });
    expect(v.escrows_on_chain).toMatchObject({ base_units: v.in_escrows.base_units, unavailable: false });
    expect(v.surplus.base_units).toBe((now - BigInt(v.to_fund.base_units)).toString());

    await engine.settleNow(pub.owner);
    v = await view();
    const { net } = splitFee(gross);
    const end = await s.usdc(treasury);
    expect(end).toBe(start - net);
    expect(v.balance.base_units).toBe(end.toString());
    expect(mine(v)).toBeUndefined();
    expect(v.escrows_on_chain.base_units).toBe('0');
    expect(await s.usdc(pub.owner)).toBe(net);

    const cycles = await op('/v1/operator/settlements?limit=10');
    const cycle = cycles.body.find((c: any) => c.publisher_owner === pub.owner);
    expect(cycle).toMatchObject({ state: 'done', stalled: false, last_failure: null, calls: 12, gross: { base_units: Number(gross) } });
    const retry = await op(`/v1/operator/settlements/${cycle.id}/retry`, { body: {} });
    expect(retry).toMatchObject({ status: 409, body: { error: `cycle ${cycle.id} is done: nothing to retry` } });

    const revenue = await op('/v1/operator/revenue?days=7');
    expect(revenue.body.points).toHaveLength(7);
    const today = revenue.body.points.at(-1);
    expect(BigInt(today.revenue.base_units)).toBeGreaterThanOrEqual(12n * splitFee(123_457n).fee);
    const audit = await op('/v1/operator/audit?limit=5');
    expect(audit.body[0]).toMatchObject({ action: 'settlement.retry', target: cycle.id, outcome: 'failed', actor: OPERATOR });
  });

  it('rejects bad operator input with a clear error and changes nothing', async () => {
    expect(await op('/v1/operator/disputes?state=weird')).toMatchObject({ status: 400, body: { error: 'state must be open, resolved or all' } });
    expect(await op('/v1/operator/disputes/CNOPE/resolve', { body: { action: 'refund' } })).toMatchObject({
      status: 404,
      body: { error: 'dispute not found' },
    });
    expect(await op('/v1/operator/revenue?days=0')).toMatchObject({ status: 400 });
    expect(await op('/v1/operator/settlements/abc/retry', { body: {} })).toMatchObject({ status: 400, body: { error: 'cycle id must be an integer' } });
    const caller = await newCaller(s, 2n * USDC);
    const escrowId = await fundedNotServed(caller, 'ops-down');
    await caller.client.dispute(escrowId);
    expect(await op(`/v1/operator/disputes/${escrowId}/resolve`, { body: { action: 'refund', payer_base_units: 1 } })).toMatchObject({
      status: 400,
      body: { error: 'a refund takes no amounts (it returns the whole balance)' },
    });
    expect(await op(`/v1/operator/disputes/${escrowId}/resolve`, { body: { action: 'split', payer_base_units: 1.5, receiver_base_units: 0 } })).toMatchObject({
      status: 400,
    });
    expect(await op(`/v1/operator/disputes/${escrowId}/resolve`, { body: { action: 'give-it-all-away' } })).toMatchObject({
      status: 400,
      body: { error: 'action must be refund or split' },
    });
    expect(await caller.client.getEscrow(escrowId)).toMatchObject({ balance: 5_000_000n, flags: { disputed: true, resolved: false } });
  });
});

describe('operator: the contract (@farebox/contract)', () => {
  it('answers every request of this suite as its operation declares, against the served OpenAPI document', async () => {
    const doc = await (await fetch(`${s.url}/openapi.json`)).json();
    const responses = recorder.responses.filter((r) => !r.path.startsWith('/openapi.json'));
    const report = await checkResponses(doc, responses);
    expect(report.violations).toEqual([]);
    expect(report.unmatched.filter((u) => !u.split(' ')[1]!.startsWith('/devnet/'))).toEqual([]);
    const ops = new Set([...report.checked].map((c) => c.split(' ')[0]));
    for (const id of [
      'operatorWhoami',
      'operatorDisputes',
      'operatorResolveDispute',
      'operatorTreasury',
      'operatorSettlements',
      'operatorRevenue',
      'operatorAudit',
      'openDispute',
    ])
      expect(ops, id).toContain(id);
  });
});
