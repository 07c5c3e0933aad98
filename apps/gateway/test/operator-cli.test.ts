import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { grantOperator } from '@farebox/gateway-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from './settlement-kit.js';
import { USDC, fundedNotServed, newCaller } from './dispute-kit.js';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const CLI = join(here, '..', '..', 'cli', 'src', 'cli.ts');
const OPERATOR = `cli-ops${process.pid}@farebox.test`;

/** The real `farebox` command (from source) in a subprocess. */
async function farebox(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    // node with tsx's loader: the same program as `pnpm exec tsx`, without pnpm's own start-up on every command.
    const r = await run(process.execPath, ['--import', 'tsx', '--conditions', '@farebox/source', CLI, ...args], {
      cwd: join(here, '..'),
      env: { ...process.env, FAREBOX_CONFIG_DIR: await mkdtemp(join(tmpdir(), 'farebox-cli-')), ...env },
      timeout: 60_000,
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const x = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof x.code === 'number' ? x.code : 1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
  }
}

let s: Stack;
let opKey: string;
beforeAll(async () => {
  s = await startStack({ env: { FAREBOX_DISPUTE_AUTO_REFUND_MINUTES: 'off' } });
  await s.publish('cli-down', '0.5', () => {
    throw new Error('down');
  });
  const res = await fetch(`${s.url}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: OPERATOR, password: 'correct horse battery' }),
  });
  const signup = (await res.json()) as { id: string; csrf_token: string };
  const cookie = (res.headers.getSetCookie?.() ?? []).map((c) => c.split(';')[0]).join('; ');
  opKey = (await s.request('/v1/api-keys', { body: { name: 'cli' }, headers: { cookie, 'x-csrf-token': signup.csrf_token } })).body.key;
  // The role goes to the account once it exists, by its id (what `farebox operator grant` stores; the command itself is tested below).
  await grantOperator(s.gw.core.db, signup.id, 'cli:test');
}, 60_000);
afterAll(async () => {
  await s?.close();
});

describe('the farebox command: disputes and operator tools', () => {
  it('opens a dispute with the payer keypair, lists it for the operator, and resolves it with a split paid exactly', async () => {
    const caller = await newCaller(s, 3n * USDC);
    const escrowId = await fundedNotServed(caller, 'cli-down');
    const keyFile = join(await mkdtemp(join(tmpdir(), 'farebox-key-')), 'payer.json');
    await writeFile(keyFile, JSON.stringify({ secret: caller.secret }), { mode: 0o600 });

    const opened = await farebox(['--url', s.url, '--json', 'dispute', escrowId, '--keypair', keyFile, '--reason', 'no answer']);
    expect(opened.code, opened.stderr).toBe(0);
    expect(JSON.parse(opened.stdout)).toMatchObject({ escrowId, state: 'open' });

    const env = { FAREBOX_API_KEY: opKey };
    const listed = await farebox(['--url', s.url, '--json', 'operator', 'disputes'], env);
    expect(JSON.parse(listed.stdout).map((d: { escrow_id: string }) => d.escrow_id)).toContain(escrowId);

    const bad = await farebox(['--url', s.url, 'operator', 'resolve', escrowId, '--payer', '0.1'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/needs both --payer and --receiver/);
    const before = await s.usdc(caller.publicKey);
    const resolved = await farebox(['--url', s.url, '--json', 'operator', 'resolve', escrowId, '--payer', '0.125', '--receiver', '0.375'], env);
    expect(resolved.code, resolved.stderr).toBe(0);
    expect(JSON.parse(resolved.stdout)).toMatchObject({ state: 'resolved', resolution: 'split' });
    expect(await s.usdc(caller.publicKey)).toBe(before + 1_250_000n);

    const stranger = await farebox(['--url', s.url, 'operator', 'treasury'], { FAREBOX_API_KEY: (await s.user()).key });
    expect(stranger.code).toBe(1);
    expect(stranger.stderr).toMatch(/operator role required \(HTTP 403, request id [0-9a-f-]{36}\)/);
    const audit = await farebox(['--url', s.url, '--json', 'operator', 'audit'], env);
    expect(JSON.parse(audit.stdout)[0]).toMatchObject({ action: 'treasury.view', outcome: 'denied' });
  }, 120_000);
});

describe('farebox operator grant, list and revoke (the gateway database, existing accounts only)', () => {
  it('refuses an address with no account and stores nothing, so a later sign-up with it (any case) gets no role; grants, lists and revokes an account by e-mail or id', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'farebox-opcli-'));
    const db = ['--data-dir', dataDir];
    const local = { DATABASE_URL: '' };
    let st = await startStack({ devnet: s.devnet, dataDir });
    const ops = await st.user();
    const opsEmail = (await ops.api('/v1/me')).body.email as string;
    // The embedded database takes one process: the gateway stops while the CLI writes.
    await st.gw.close();

    const future = `future-cli${process.pid}@farebox.test`;
    const refused = await farebox(['operator', 'grant', future, ...db], local);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `no account "${future}": the operator signs up first, then gets the role (it is never granted to an address with no account)`,
    );

    const granted = await farebox(['operator', 'grant', opsEmail.toUpperCase(), ...db], local);
    expect(granted.code, granted.stderr).toBe(0);
    expect(granted.stdout.trim()).toBe(`${opsEmail} (${ops.id}) is now an operator`);
    const listed = await farebox(['--json', 'operator', 'list', ...db], local);
    expect(JSON.parse(listed.stdout)).toEqual([
      { account_id: ops.id, email: opsEmail, granted_by: expect.stringMatching(/^cli/), granted_at: expect.any(String) },
    ]);

    st = await startStack({ devnet: s.devnet, dataDir });
    try {
      const as = (key: string, path: string) => st.request(path, { headers: { authorization: `Bearer ${key}` } });
      expect((await as(ops.key, '/v1/operator/whoami')).body).toMatchObject({ operator: true });
      expect((await as(ops.key, '/v1/operator/treasury')).status).toBe(200);
      const res = await fetch(`${st.url}/auth/signup`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: future.toUpperCase(), password: 'correct horse battery' }),
      });
      expect(res.status).toBe(201);
      const cookie = (res.headers.getSetCookie?.() ?? []).map((c) => c.split(';')[0]).join('; ');
      expect(await st.request('/v1/operator/treasury', { headers: { cookie } })).toMatchObject({ status: 403, body: { error: 'operator role required' } });
      expect(await st.request('/v1/operator/whoami', { headers: { cookie } })).toMatchObject({ body: { operator: false } });
      const audit = (await as(ops.key, '/v1/operator/audit')).body as Array<{ actor: string; action: string; target: string; outcome: string }>;
      expect(
        audit
          .filter((e) => e.action.startsWith('operator.') || e.actor === future.toUpperCase())
          .map(({ action, target, outcome }) => ({ action, target, outcome })),
      ).toEqual([
        { action: 'treasury.view', target: null, outcome: 'denied' },
        { action: 'operator.grant', target: ops.id, outcome: 'ok' },
        { action: 'operator.grant', target: future, outcome: 'failed' },
      ]);
    } finally {
      await st.gw.close();
    }

    const revoked = await farebox(['operator', 'revoke', ops.id, ...db], local);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout.trim()).toBe(`${opsEmail} (${ops.id}) is no longer an operator`);
    expect(JSON.parse((await farebox(['--json', 'operator', 'list', ...db], local)).stdout)).toEqual([]);
  }, 180_000);
});
