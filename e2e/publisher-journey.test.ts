// Issue 50's acceptance: a publisher's first hour, outside the checkout, from the tarballs. `pnpm tarballs`, a
// fresh `npm init -y` folder made an ES module as packages/provider/README.md says, the README's `reverse`
// service at 0.002 USDC run as written (`node service.js`, linked to the publisher's account by
// bootstrap({ account })), paid calls by a consumer through @farebox/client and the installed `farebox` CLI,
// the earnings seen by the linked publisher and by owner, a settle-now cycle, and the owner's wallet up by
// exactly 95 % of the gross on chain.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFile, mkdtemp, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAccounts } from '@farebox/stellar';
import { eventually } from '@farebox/test-kit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Stack, type StackUser, startStack } from './stack.js';

const repo = join(import.meta.dirname, '..');
let h: Stack;
let pub: StackUser;
let consumer: StackUser;
let home: string;
let env: Record<string, string>;
const running: ChildProcess[] = [];

/** The lines of the fenced block of `file` that starts with `first` (up to its closing fence), word for word. */
async function readmeBlock(file: string, first: string): Promise<string> {
  const lines = (await readFile(join(repo, file), 'utf8')).split('\n');
  const at = lines.indexOf(first);
  expect(at, `${file} no longer has the line ${first}`).toBeGreaterThan(0);
  expect(lines[at - 1], `${file}: ${first} opens a fenced block`).toMatch(/^```/);
  const end = lines.indexOf('```', at);
  return lines.slice(at, end).join('\n');
}

function sh(line: string, cwd: string, extra: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', line], { cwd, env: { ...env, ...extra }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, out, err }));
  });
}
async function ok(line: string, cwd: string, extra: Record<string, string> = {}) {
  const r = await sh(line, cwd, extra);
  expect(r.code, `${line}\n${r.err}\n${r.out}`).toBe(0);
  return r;
}

beforeAll(async () => {
  h = await startStack();
  pub = await h.user();
  consumer = await h.user();
  expect((await pub.api('/v1/publisher/activate', { body: { name: 'Reverse Inc' } })).status).toBe(200);
  home = await mkdtemp(join(tmpdir(), 'farebox-journey-'));
  env = {
    PATH: process.env.PATH ?? '',
    HOME: home,
    FAREBOX_URL: h.url,
    BROWSER: 'none',
    npm_config_cache: process.env.npm_config_cache ?? join(homedir(), '.npm'),
    npm_config_update_notifier: 'false',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
  };
}, 120_000);

afterAll(async () => {
  for (const child of running) {
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      // already gone
    }
  }
  await h?.close();
});

it('npm init -y, the README service, paid calls by SDK and CLI, earnings by owner and for the linked publisher, settle now: the owner gets exactly 95 %', async () => {
  // The tarballs, packed in the checkout (the README: pnpm tarballs ~/farebox-tarballs @farebox/provider).
  await ok('pnpm tarballs ~/farebox-tarballs @farebox/provider @farebox/client @farebox/cli', repo);

  // The publisher's folder, as packages/provider/README.md writes it.
  const setup = await readmeBlock('packages/provider/README.md', 'mkdir reverse && cd reverse');
  expect(setup).toBe('mkdir reverse && cd reverse\nnpm init -y && npm pkg set type=module\nnpm i ~/farebox-tarballs/*.tgz');
  await ok(setup, home);
  const project = join(home, 'reverse');
  expect(JSON.parse(await readFile(join(project, 'package.json'), 'utf8'))).toMatchObject({ type: 'module' });
  await writeFile(join(project, 'service.js'), `${await readmeBlock('packages/provider/README.md', '// service.js')}\n`);
  expect(await readmeBlock('packages/provider/README.md', 'node service.js')).toBe('node service.js');

  // `node service.js`, with the publisher's key: registered on the devnet, the owner key linked to the account.
  const child = spawn('sh', ['-c', 'node service.js'], {
    cwd: project,
    env: { ...env, PORT: '0', FAREBOX_API_KEY: pub.key },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  running.push(child);
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d));
  child.stderr.on('data', (d: Buffer) => (out += d));
  await eventually('the service registers', () => /registered reverse; owner G[A-Z0-9]{55}; linked to your account/.test(out) || child.exitCode !== null, {
    timeoutMs: 60_000,
    intervalMs: 100,
  }).catch((e: Error) => {
    throw new Error(`${e.message}; node service.js printed:\n${out}`);
  });
  expect(out).toMatch(/registered reverse; owner (G[A-Z0-9]{55}); linked to your account/);
  const owner = /owner (G[A-Z0-9]{55})/.exec(out)![1]!;
  expect(await readFile(join(project, '.farebox', 'keypair'), 'utf8')).toMatch(/^S[A-Z0-9]{55}\n$/);
  await h.gw.core.mirror.syncOnce();

  // The consumer: two calls through the SDK (@farebox/client's gateway client), two through the installed CLI.
  const consumerEnv = { FAREBOX_API_KEY: consumer.key, FAREBOX_CONFIG_DIR: join(home, 'consumer-cli') };
  await writeFile(
    join(project, 'consumer.mjs'),
    [
      "import { createGatewayClient } from '@farebox/client';",
      'const gw = createGatewayClient({ baseUrl: process.env.FAREBOX_URL, apiKey: process.env.FAREBOX_API_KEY });',
      "for (const text of ['hello', 'farebox']) console.log(JSON.stringify((await gw.call('reverse', { text })).result));",
    ].join('\n'),
  );
  expect((await ok('node consumer.mjs', project, consumerEnv)).out).toBe('{"reversed":"olleh"}\n{"reversed":"xoberaf"}\n');
  for (const text of ['abc', 'xyz']) {
    const called = await ok(`npx farebox call reverse '{"text":"${text}"}'`, project, consumerEnv);
    expect(called.out).toContain(`"reversed": "${[...text].reverse().join('')}"`);
  }
  const balance = await ok('npx farebox balance', project, consumerEnv);
  // 5 USD of sign-up credit less four calls of 0.002: shown to the tenth of a cent, not rounded to $5.00.
  expect(balance.out).toMatch(/credits\s+\$4\.992 /);

  // Earnings: gross 4 x 0.002 = 0.008, fee 5 % = 0.0004, net 0.0076 USDC.
  const gross = 80_000;
  const fee = 4_000;
  const net = 76_000;
  const byOwner = JSON.parse((await ok(`npx farebox publisher earnings ${owner} --json`, project, { FAREBOX_CONFIG_DIR: join(home, 'anon-cli') })).out);
  expect(byOwner).toMatchObject({ owner, calls: 4, gross_base_units: gross, fee_base_units: fee, net_base_units: net, pending_base_units: net });
  const pubEnv = { FAREBOX_API_KEY: pub.key, FAREBOX_CONFIG_DIR: join(home, 'publisher-cli') };
  const overview = JSON.parse((await ok('npx farebox publisher overview --json', project, pubEnv)).out);
  expect(overview).toMatchObject({ calls: 4, linked_owners: [owner], gross_base_units: gross, fee_base_units: fee, earned_base_units: net });
  expect(overview.services.map((s: { service: string }) => s.service)).toEqual(['reverse']);

  // Settle now: one cycle, released to the owner's wallet; on chain, exactly 95 % of the gross.
  const chain = createAccounts(h.gw.core.network);
  const before = (await chain.balances(owner)).usdc ?? 0n;
  const settled = await ok('npx farebox publisher settle', project, pubEnv);
  expect(settled.out).toMatch(
    new RegExp(`^Settled now:\\n- 4 calls: gross \\$0\\.008, fee \\$0\\.0004 \\(5 %\\), net \\$0\\.0076 paid to ${owner}\\n  release: http`),
  );
  const after = (await chain.balances(owner)).usdc ?? 0n;
  expect(after - before).toBe(BigInt(net));
  expect((after - before) * 100n).toBe(BigInt(gross) * 95n);
  const paid = JSON.parse((await ok(`npx farebox publisher earnings ${owner} --json`, project, { FAREBOX_CONFIG_DIR: join(home, 'anon-cli') })).out);
  expect(paid).toMatchObject({ settled_base_units: net, pending_base_units: 0, payouts: [{ state: 'done', paid: { base_units: net } }] });
  console.log(
    `journey: gross ${gross} base units, fee ${fee}, net ${net}; the owner's USDC ${before} -> ${after} (+${after - before}, ${Number(((after - before) * 10000n) / BigInt(gross)) / 100} %)`,
  );
}, 600_000);
