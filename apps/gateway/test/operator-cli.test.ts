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
    const r = await run('pnpm', ['exec', 'tsx', '--conditions', '@farebox/source', CLI, ...args], { cwd: join(here, '..'), env: { ...process.env, FAREBOX_CONFIG_DIR: await mkdtemp(join(tmpdir(), 'farebox-cli-')), ...env }, timeout: 60_000 });
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
  const res = await fetch(`${s.url}/auth/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: OPERATOR, password: 'correct horse battery' }) });
  const signup = (await res.json()) as { csrf_token: string };
  const cookie = (res.headers.getSetCookie?.() ?? []).map((c) => c.split(';')[0]).join('; ');
  opKey = (await s.request('/v1/api-keys', { body: { name: 'cli' }, headers: { cookie, 'x-csrf-token': signup.csrf_token } })).body.key;
  // The role goes to the account once it exists (the `farebox operator grant` path).
  await grantOperator(s.gw.core.db, OPERATOR, 'cli:test');
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
    expect(stranger.stderr).toMatch(/operator role required \(HTTP 403\)/);
    const audit = await farebox(['--url', s.url, '--json', 'operator', 'audit'], env);
    expect(JSON.parse(audit.stdout)[0]).toMatchObject({ action: 'treasury.view', outcome: 'denied' });
  }, 120_000);
});
