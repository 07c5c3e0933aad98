import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserSignIn, startStack, type Stack, type StackUser } from './stack.js';
import { eventually } from '@farebox/test-kit';
import { ensureBuilt, farebox, printedRoutes, runFarebox, start, startInProcess } from './cli.js';

// The commands' behaviour, in process (runCli: the binary's body, the same
// output and exit codes); the built binary for its entry point: a call whose
// payload comes on stdin, and the installed tarballs below.
describe('farebox against a running local stack', () => {
  let h: Stack;
  let alice: StackUser;
  let tmp: string;
  let n = 0;

  /** A fresh config folder (HOME-like isolation) per scenario. */
  async function env(extra: Record<string, string> = {}) {
    const dir = await mkdtemp(join(tmp, `cfg${n++}-`));
    return { PATH: process.env.PATH ?? '', HOME: dir, FAREBOX_CONFIG_DIR: join(dir, 'farebox'), FAREBOX_URL: h.url, BROWSER: 'none', ...extra };
  }
  const json = (s: string) => JSON.parse(s) as any;

  beforeAll(async () => {
    ensureBuilt();
    h = await startStack();
    await h.publish('echo', '0.01');
    alice = await h.user();
    tmp = await mkdtemp(join(tmpdir(), 'farebox-cli-test-'));
  }, 240_000);

  afterAll(async () => {
    await h?.close();
  });

  it('logs in with an API key (stored 0600), then whoami, balance, topup, search, call (argument, file, stdin), transactions, in human and --json output', async () => {
    const e = await env();
    const login = await runFarebox(['login', '--api-key', alice.key], { env: e });
    expect(login.code, login.stderr).toBe(0);
    expect(login.stdout).toContain(`Signed in to ${h.url} as ${alice.email}`);
    const stored = join(e.FAREBOX_CONFIG_DIR, 'cli.json');
    expect((await stat(stored)).mode & 0o777).toBe(0o600);
    expect(json(await readFile(stored, 'utf8'))).toMatchObject({ url: h.url, apiKey: alice.key });

    const who = await runFarebox(['whoami'], { env: e });
    expect(who.stdout).toMatch(new RegExp(`email\\s+${alice.email.replace(/\./g, '\\.')}`));
    expect(json((await runFarebox(['whoami', '--json'], { env: e })).stdout)).toMatchObject({ email: alice.email, credential: 'api-key' });

    const before = json((await runFarebox(['balance', '--json'], { env: e })).stdout).balance_base_units as number;
    expect((await runFarebox(['balance'], { env: e })).stdout).toMatch(/credits\s+\$\d/);
    const topup = await runFarebox(['topup', '5'], { env: e });
    expect(topup.stdout).toContain('Added $5.00');
    expect(json((await runFarebox(['balance', '--json'], { env: e })).stdout).balance_base_units).toBe(before + 50_000_000);

    const search = await runFarebox(['search', 'echo'], { env: e });
    expect(search.stdout).toMatch(/^SERVICE\s+PRICE\s+CALLS\s+HEALTH\s+DESCRIPTION/m);
    // Each service's health (docs/api.md, "Service health"): `new` until it has had enough calls to judge.
    expect(search.stdout).toMatch(/^echo\s+0\.01 USDC\s+\d+\s+new\s/m);
    // This stack has no embedding model: the CLI says the search was keyword-only (stderr, the table stays stdout).
    expect(search.stderr).toMatch(/^\(keyword-only search: the gateway has no embedding model loaded/m);
    expect((json((await runFarebox(['search', '--json'], { env: e })).stdout) as Array<{ service: string }>).map((s) => s.service)).toContain('echo');
    // --limit reaches the gateway: one service listed, and a bad limit is refused before any request.
    await h.publish('echo-second', '0.01');
    await eventually('two services listed', async () => (json((await runFarebox(['search', '--json'], { env: e })).stdout) as unknown[]).length >= 2);
    expect(json((await runFarebox(['search', '--json', '--limit', '1'], { env: e })).stdout)).toHaveLength(1);
    const badLimit = await runFarebox(['search', '--limit', 'ten'], { env: e });
    expect([badLimit.code, badLimit.stderr]).toEqual([2, expect.stringContaining('--limit must be a whole number')]);

    const call = await runFarebox(['call', 'echo', '{"hello":"cli"}'], { env: e });
    expect(call.code).toBe(0);
    expect(call.stdout).toContain('"hello": "cli"');
    expect(call.stdout).toMatch(/cost\s+\$0\.01 \(credit, platform-signed\)/);
    const file = join(tmp, 'payload.json');
    await import('node:fs/promises').then((fs) => fs.writeFile(file, '{"from":"file"}'));
    expect(json((await runFarebox(['call', 'echo', '--file', file, '--json'], { env: e })).stdout)).toMatchObject({
      result: { echo: { from: 'file' } },
      cost: { lamports: 100_000 },
    });
    // The built binary, its payload on stdin.
    expect(json((await farebox(['call', 'echo', '--json'], { env: e, input: '{"from":"stdin"}' })).stdout)).toMatchObject({
      result: { echo: { from: 'stdin' } },
    });
    expect(json((await runFarebox(['balance', '--json'], { env: e })).stdout).balance_base_units).toBe(before + 50_000_000 - 300_000);

    const txs = json((await runFarebox(['transactions', '--json', '--limit', '3'], { env: e })).stdout) as Array<{ type: string; service: string }>;
    expect(txs).toHaveLength(3);
    expect(txs[0]).toMatchObject({ type: 'call', service: 'echo' });
    expect((await runFarebox(['transactions'], { env: e })).stdout).toMatch(/^WHEN\s+TYPE\s+SERVICE/m);
  });

  it('reports bad input with exit 2 and gateway refusals with exit 1, on stderr, charging nothing', async () => {
    const e = await env({ FAREBOX_API_KEY: alice.key });
    const before = json((await runFarebox(['balance', '--json'], { env: e })).stdout).balance_base_units as number;
    const notObject = await runFarebox(['call', 'echo', '[1,2]'], { env: e });
    expect(notObject.code).toBe(2);
    expect(notObject.stdout).toBe('');
    expect(notObject.stderr).toContain('must be a JSON object');
    const badJson = await runFarebox(['call', 'echo', '{nope'], { env: e });
    expect(badJson.code).toBe(2);
    expect(badJson.stderr).toContain('is not valid JSON');
    const unknown = await runFarebox(['call', 'no-such-service', '{}', '--json'], { env: e });
    expect(unknown.code).toBe(1);
    expect(json(unknown.stderr)).toMatchObject({
      error: 'service not found',
      code: 'NOT_FOUND',
      status: 404,
      requestId: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect((await runFarebox(['call', 'no-such-service', '{}'], { env: e })).stderr).toMatch(
      /^farebox: service not found \(HTTP 404, request id [0-9a-f-]{36}\)$/m,
    );
    const topup = await runFarebox(['topup', '-3'], { env: e });
    expect(topup.code).toBe(2);
    expect(json((await runFarebox(['balance', '--json'], { env: e })).stdout).balance_base_units).toBe(before);

    const anonymous = await runFarebox(['balance'], { env: await env() });
    expect(anonymous.code).toBe(1);
    expect(anonymous.stderr).toContain('not signed in');
    const unknownCommand = await runFarebox(['frobnicate'], { env: e });
    expect(unknownCommand.code).toBe(2);
    expect(unknownCommand.stderr).toContain("unknown command 'frobnicate'");
  });

  it('creates a key with a spending policy (--limit, --allow, --max-call), shows it, names the limit when a call is refused, and changes it with keys set', async () => {
    const e = await env({ FAREBOX_API_KEY: alice.key });
    const made = await runFarebox(['keys', 'create', 'agent', '--limit', '0.01/day', '--allow', 'echo', '--max-call', '0.05', '--json'], { env: e });
    expect(made.code, made.stderr).toBe(0);
    const created = json(made.stdout);
    expect(created).toMatchObject({ limit_usd: 0.01, limit_period: 'day', allowed_services: ['echo'], max_call_usd: 0.05, remaining_usd: 0.01 });
    expect((await runFarebox(['keys', 'list'], { env: e })).stdout).toContain('$0.01 of $0.01/day left');
    const k = await env({ FAREBOX_API_KEY: created.key });
    expect((await runFarebox(['call', 'echo', '{}'], { env: k })).code).toBe(0);
    const over = await runFarebox(['call', 'echo', '{}', '--json'], { env: k });
    expect(over.code).toBe(1);
    const refusal = json(over.stderr);
    expect(refusal).toMatchObject({ status: 402, spendingLimit: { source: 'key', limitUsd: 0.01, remainingUsd: 0 } });
    expect(refusal.error).toContain('spending limit reached: this API key may spend $0.01 per day (UTC)');
    const set = await runFarebox(['keys', 'set', created.id, '--limit', 'none', '--json'], { env: e });
    expect(json(set.stdout)).toMatchObject({ limit_usd: null, allowed_services: ['echo'], max_call_usd: 0.05 });
    // The README's example (a comma-separated --allow), in human output: the whole policy as the gateway stored it.
    const human = await runFarebox(['keys', 'create', 'ci-agent', '--limit', '5/day', '--allow', 'echo,word-count', '--max-call', '0.05'], { env: e });
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(
      /spending policy: \$5 of \$5\/day left \(resets \d{4}-\d{2}-\d{2}T00:00:00\.000Z\); only echo, word-count; max \$0\.05 a call\./,
    );
    const listed = json((await runFarebox(['keys', 'list', '--json'], { env: e })).stdout).find((x: { name: string }) => x.name === 'ci-agent');
    expect(listed).toMatchObject({
      limit_usd: 5,
      limit_period: 'day',
      allowed_services: ['echo', 'word-count'],
      max_call_usd: 0.05,
      spent_usd: 0,
      remaining_usd: 5,
    });
    const bad = await runFarebox(['keys', 'create', 'x', '--limit', '5'], { env: e });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--limit must look like 5/day (periods: day, week, month, total), or none');
  });

  it('creates, lists and revokes API keys, and lists connections', async () => {
    const e = await env({ FAREBOX_API_KEY: alice.key });
    const created = json((await runFarebox(['keys', 'create', 'ci-key', '--json'], { env: e })).stdout);
    expect(created.key).toMatch(/^sk_live_/);
    const human = await runFarebox(['keys', 'list'], { env: e });
    expect(human.stdout).toMatch(/ci-key/);
    const works = await runFarebox(['balance', '--json', '--api-key', created.key], { env: await env() });
    expect(works.code).toBe(0);
    expect((await runFarebox(['keys', 'revoke', created.id], { env: e })).stdout).toContain(`Revoked API key ${created.id}`);
    const dead = await runFarebox(['balance', '--api-key', created.key], { env: await env() });
    expect(dead.code).toBe(1);
    expect(dead.stderr).toContain(
      'invalid credential: the gateway does not know this API key (revoked, mistyped, or made on another gateway: check --url / FAREBOX_URL); sign in again with `farebox login --api-key sk_live_...` (a key from the dashboard or `farebox keys create`), or fix --api-key / FAREBOX_API_KEY',
    );
    expect(json((await runFarebox(['connections', '--json'], { env: e })).stdout)).toEqual([]);
    // --spend-only: a key that may call and read its own, never manage keys (docs/api.md, "Credentials and what each may do").
    const spendOnly = await runFarebox(['keys', 'create', 'reader', '--spend-only'], { env: e });
    expect(spendOnly.stdout).toContain('a spend key: it may call, search and read its own balance, transactions and policy');
    const reader = /^(sk_live_\S+)/.exec(spendOnly.stdout)![1]!;
    expect(json((await runFarebox(['keys', 'list', '--json'], { env: e })).stdout).find((x: { name: string }) => x.name === 'reader')).toMatchObject({
      kind: 'spend',
    });
    const escaped = await runFarebox(['keys', 'create', 'escape', '--api-key', reader], { env: await env() });
    expect(escaped.code).toBe(1);
    expect(escaped.stderr).toContain('this is a spend key: it may only call services, search the catalog and read its own balance');
  });

  it('signs in through the browser (URL on stderr), uses the OAuth token, explains what needs an API key, and the connection can be revoked', async () => {
    const bob = await h.user();
    const e = await env();
    const login = startInProcess(['login'], { env: e });
    const url = await eventually('the sign-in URL on stderr', () => /^ {2}(http\S+\/authorize\?\S+)$/m.exec(login.stderr())?.[1], { timeoutMs: 20_000 });
    const signIn = await browserSignIn(h.url, url, bob);
    expect(signIn.consentHtml).toContain('farebox CLI');
    const done = await login.done;
    expect(done.code).toBe(0);
    expect(done.stdout).toContain(`as ${bob.email} through the browser`);
    expect((await stat(join(e.FAREBOX_CONFIG_DIR, 'cli-token.json'))).mode & 0o777).toBe(0o600);

    expect(json((await runFarebox(['balance', '--json'], { env: e })).stdout).balance_base_units).toBe(50_000_000);
    expect(json((await runFarebox(['call', 'echo', '{"via":"oauth"}', '--json'], { env: e })).stdout)).toMatchObject({ result: { echo: { via: 'oauth' } } });
    const keys = await runFarebox(['keys', 'list'], { env: e });
    expect(keys.code).toBe(1);
    expect(keys.stderr).toContain('farebox login --api-key');

    const bobKey = await env({ FAREBOX_API_KEY: bob.key });
    const conns = json((await runFarebox(['connections', 'list', '--json'], { env: bobKey })).stdout) as Array<{ id: string }>;
    expect(conns).toHaveLength(1);
    expect((await runFarebox(['connections', 'revoke', conns[0]!.id], { env: bobKey })).code).toBe(0);
    const after = await runFarebox(['balance'], { env: { ...e, BROWSER: 'none' } });
    expect(after.code).not.toBe(0);
  });

  it('publishes: activate, register, update, overview, analytics, settlements, remove', async () => {
    const carol = await h.user();
    const e = await env({ FAREBOX_API_KEY: carol.key });
    const activated = await runFarebox(['publisher', 'activate', 'Carol Labs'], { env: e });
    expect(activated.code).toBe(0);
    expect(activated.stdout).toContain('Publisher "Carol Labs" is active');
    const me = json((await runFarebox(['whoami', '--json'], { env: e })).stdout);
    const { endpoint } = await h.serve('carol-svc', '0.02', me.custodial_wallet);
    const reg = await runFarebox(
      ['publisher', 'register', '--service', 'carol-svc', '--price', '0.02', '--endpoint', endpoint, '--description', 'Carol echoes', '--json'],
      { env: e },
    );
    expect(reg.code, reg.stderr).toBe(0);
    expect(json(reg.stdout)).toMatchObject({ service: 'carol-svc', pricePerCallBaseUnits: 200_000 });
    const upd = await runFarebox(['publisher', 'update', 'carol-svc', '--description', 'Carol echoes, better'], { env: e });
    expect(upd.code, upd.stderr).toBe(0);
    expect(upd.stdout).toContain('Updated "carol-svc": 0.02 USDC per call');
    await h.gw.core.mirror.syncOnce();
    const paid = await runFarebox(['call', 'carol-svc', '{"n":1}', '--json'], { env: await env({ FAREBOX_API_KEY: alice.key }) });
    expect(paid.code, paid.stderr).toBe(0);
    const overview = json((await runFarebox(['publisher', 'overview', '--json'], { env: e })).stdout);
    expect(overview).toMatchObject({ publisher_name: 'Carol Labs', calls: 1 });
    expect(overview.services.map((s: { service: string }) => s.service)).toContain('carol-svc');
    expect((await runFarebox(['publisher', 'overview'], { env: e })).stdout).toMatch(/^carol-svc\s+0\.02 USDC\s+1/m);
    const analytics = json((await runFarebox(['publisher', 'analytics', '--days', '7', '--json'], { env: e })).stdout) as Array<{ calls: number }>;
    expect(analytics).toHaveLength(7);
    expect(analytics.at(-1)!.calls).toBe(1);
    expect((await runFarebox(['publisher', 'analytics', '--days', '91'], { env: e })).code).toBe(2);
    expect((await runFarebox(['publisher', 'settlements', '--json'], { env: e })).code).toBe(0);
    const removed = await runFarebox(['publisher', 'remove', 'carol-svc', '--json'], { env: e });
    expect(json(removed.stdout)).toMatchObject({ service: 'carol-svc', removed: true });
  });

  it('pays a service directly from a local keypair through an escrow, showing the progress', async () => {
    const e = await env();
    const keyPath = join(tmp, 'payer.key');
    const kp = await runFarebox(['devnet', 'keypair', keyPath, '--usdc', '5', '--json'], { env: e });
    expect(kp.code, kp.stderr).toBe(0);
    const payer = json(kp.stdout).publicKey as string;
    expect((await stat(keyPath)).mode & 0o777).toBe(0o600);
    const usdcBefore = h.gw.devnet!.chain.accounts.get(payer)?.usdc?.balance;
    expect(usdcBefore).toBe(50_000_000n);

    const call = await runFarebox(['call', 'echo', '{"direct":true}', '--direct', '--keypair', keyPath], { env: e });
    expect(call.code, call.stderr).toBe(0);
    expect(call.stdout).toContain('"direct": true');
    expect(call.stdout).toMatch(/cost\s+0\.01 USDC/);
    for (const step of ['Getting a quote', 'Opening the escrow', 'Funding the escrow', 'Calling the service']) expect(call.stderr).toContain(`✓ ${step}`);
    expect(h.gw.devnet!.chain.accounts.get(payer)?.usdc?.balance).toBe(50_000_000n - 100_000n);

    const fund = await runFarebox(['devnet', 'fund', payer, '--usdc', '1', '--json'], { env: e });
    expect(json(fund.stdout)).toMatchObject({ address: payer, usdc: '1', network: 'local' });
    expect(h.gw.devnet!.chain.accounts.get(payer)?.usdc?.balance).toBe(60_000_000n - 100_000n);
    const noKeypair = await runFarebox(['call', 'echo', '{}', '--direct'], { env: e });
    expect(noKeypair.code).toBe(2);
  });

  it('scaffolds a paid service with init and refuses a folder that is not empty', async () => {
    const dir = join(tmp, 'my-svc');
    const r = await runFarebox(['init', dir, '--price', '0.05', '--json'], { env: await env() });
    expect(r.code, r.stderr).toBe(0);
    expect(json(r.stdout)).toMatchObject({
      service: 'my-svc',
      price: '0.05',
      files: ['.gitignore', 'README.md', 'package.json', 'src/index.ts', 'tsconfig.json'],
    });
    const pkg = json(await readFile(join(dir, 'package.json'), 'utf8'));
    expect(pkg).toMatchObject({ name: 'my-svc', dependencies: { '@farebox/provider': '^0.1.0' } });
    const src = await readFile(join(dir, 'src', 'index.ts'), 'utf8');
    expect(src).toContain("service: 'my-svc'");
    expect(src).toContain("pricePerCall: '0.05'");
    expect(src).not.toContain('__');
    const again = await runFarebox(['init', dir], { env: await env() });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('is not empty');
    // Its next steps say that npm install needs the registry, and the way that works until the packages are there.
    const human = await runFarebox(['init', join(tmp, 'my-svc-2')], { env: await env() });
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain('until it is published there, make the scaffold\nwith `farebox init <dir> --tarballs`');
  });
});

describe('the packed tarballs, installed like a user would', () => {
  let h: Stack;
  let alice: StackUser;
  let tmp: string;
  const repo = join(import.meta.dirname, '..');
  // The CLI and every workspace package it needs at run time.
  const packages = ['apps/cli', 'apps/mcp', 'packages/client', 'packages/contract', 'packages/escrow', 'packages/protocol', 'packages/stellar'];

  async function sh(command: string, args: string[], cwd: string, extra: Record<string, string> = {}) {
    const r = await start(command, args, { env: { ...(process.env as Record<string, string>), npm_config_update_notifier: 'false', ...extra }, cwd }).done;
    if (r.code !== 0) throw new Error(`${command} ${args.join(' ')} failed (${r.code}):\n${r.stderr}\n${r.stdout}`);
    return r;
  }

  beforeAll(async () => {
    ensureBuilt();
    h = await startStack();
    await h.publish('echo', '0.01');
    alice = await h.user();
    tmp = await mkdtemp(join(tmpdir(), 'farebox-pack-'));
    for (const p of packages) await sh('pnpm', ['pack', '--pack-destination', tmp], join(repo, p));
  }, 240_000);

  afterAll(async () => {
    await h?.close();
  });

  it('npm installs the CLI tarballs into an empty project, and npx farebox runs --help and a real command', async () => {
    const project = join(tmp, 'project');
    await import('node:fs/promises').then(async (fs) => {
      await fs.mkdir(project);
      await fs.writeFile(join(project, 'package.json'), JSON.stringify({ name: 'try-farebox', private: true, type: 'module' }));
    });
    const tarballs = (await import('node:fs/promises').then((fs) => fs.readdir(tmp))).filter((f) => f.endsWith('.tgz')).map((f) => join(tmp, f));
    expect(tarballs).toHaveLength(packages.length);
    await sh('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...tarballs], project);
    const help = await sh('npx', ['--yes', 'farebox', '--help'], project);
    expect(help.stdout).toContain('Usage: farebox');
    const search = await sh('npx', ['--yes', 'farebox', 'search', 'echo', '--json', '--url', h.url, '--api-key', alice.key], project, {
      FAREBOX_CONFIG_DIR: join(tmp, 'cfg'),
    });
    expect((JSON.parse(search.stdout) as Array<{ service: string }>).map((s) => s.service)).toContain('echo');
    const init = await sh('npx', ['farebox', 'init', 'svc', '--json'], project);
    expect(JSON.parse(init.stdout)).toMatchObject({ service: 'svc' });
  }, 300_000);

  it('npx runs the installed @farebox/mcp tarball on its own, as Claude Desktop would start it', async () => {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    // The tarballs are installed in `tmp` (the previous test): npx runs the
    // installed bin. (`npx ./tarball` alone would fetch its @farebox/*
    // dependencies from the registry, where they are not published yet.)
    const transport = new StdioClientTransport({
      command: 'npx',
      args: ['--yes', 'farebox-mcp'],
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', FAREBOX_URL: h.url, FAREBOX_API_KEY: alice.key, npm_config_update_notifier: 'false' },
      cwd: join(tmp, 'project'),
      stderr: 'pipe',
    });
    const client = new Client({ name: 'npx-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['list_agents', 'call_agent', 'get_balance', 'get_transactions']);
      const call = await client.callTool({ name: 'call_agent', arguments: { service: 'echo', payload: { npx: true } } });
      expect(call.structuredContent).toMatchObject({ result: { echo: { npx: true } } });
    } finally {
      await client.close();
    }
  }, 300_000);
});

// The CLI speaks CLI: every hint names the farebox command to run, never an HTTP route (issue 35).
it('printed no HTTP route (GET /, POST /, ...) in any farebox output of this file', () => {
  const { runs, offenders } = printedRoutes();
  expect(runs).toBeGreaterThan(30);
  expect(offenders).toEqual([]);
});
