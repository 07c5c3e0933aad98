// The command blocks a newcomer runs from README.md, docs/ and the package
// READMEs, run as written by `sh` against a fresh local stack (the gateway with
// its embedded devnet, a provider-SDK `echo`). The list is explicit and
// reviewed: each block's lines must still be in its document, word for word
// (a doc edit updates this list), and must still run. Only the placeholders a
// reader replaces are substituted: the gateway's address (`127.0.0.1:8787`),
// an API key (`sk_live_...`), the checkout's path (`/path/to/farebox`), a
// port and a data folder; `~` is a fresh home folder.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@farebox/test-kit';
import { browserSignIn, type Stack, type StackUser, startStack } from './stack.js';

const repo = join(import.meta.dirname, '..');

/** The lines of a fenced block of `file` (```sh or ```json), checked to be there exactly, in this order, one after the other. */
async function docBlock(file: string, lines: string[]): Promise<string[]> {
  const text = (await readFile(join(repo, file), 'utf8')).split('\n');
  const at = text.findIndex((_, i) => lines.every((l, j) => text[i + j] === l));
  expect(at, `${file} no longer has these lines:\n${lines.join('\n')}`).toBeGreaterThanOrEqual(0);
  expect(text.slice(0, at).filter((l) => l.startsWith('```')).length % 2, `${file}: the lines are inside a fenced block`).toBe(1);
  return lines;
}

let h: Stack;
let alice: StackUser;
let home: string;
let env: Record<string, string>;
const running: ChildProcess[] = [];

/** The doc's placeholders made real: this stack's address, Alice's key, this checkout. */
const real = (line: string) => line.replaceAll('http://127.0.0.1:8787', h.url).replaceAll('sk_live_...', alice.key).replaceAll('/path/to/farebox', repo);

/** Runs one line with `sh` in `cwd` (the checkout's root by default); its output and exit code. */
function sh(line: string, opts: { cwd?: string; extra?: Record<string, string> } = {}): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', real(line)], { cwd: opts.cwd ?? repo, env: { ...env, ...opts.extra }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, out, err }));
  });
}

/** `sh` that must succeed. */
async function ok(line: string, opts: { cwd?: string; extra?: Record<string, string> } = {}) {
  const r = await sh(line, opts);
  expect(r.code, `${line}\n${r.err}\n${r.out}`).toBe(0);
  return r;
}

/** Starts a long-running line in its own process group (stopped after the suite); resolves once `ready` is in its output. */
async function background(line: string, ready: RegExp, opts: { cwd?: string; extra?: Record<string, string> } = {}) {
  const child = spawn('sh', ['-c', real(line)], { cwd: opts.cwd ?? repo, env: { ...env, ...opts.extra }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  running.push(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d));
  child.stderr!.on('data', (d: Buffer) => (out += d));
  await eventually(`${line} gets ready`, () => ready.test(out) || child.exitCode !== null, { timeoutMs: 120_000, intervalMs: 100 });
  expect(child.exitCode, `${line} exited:\n${out}`).toBeNull();
  return { output: () => out };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

beforeAll(async () => {
  h = await startStack();
  await h.publish('echo', '0.001');
  alice = await h.user();
  home = await mkdtemp(join(tmpdir(), 'farebox-docs-home-'));
  env = {
    PATH: process.env.PATH ?? '',
    HOME: home,
    FAREBOX_URL: h.url,
    BROWSER: 'none',
    // npm's cache stays the machine's (a fresh HOME would download everything again).
    npm_config_cache: process.env.npm_config_cache ?? join(homedir(), '.npm'),
    npm_config_update_notifier: 'false',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
  };
}, 60_000);

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

// Concurrent: about 30 s of CPU in all (two packings, two npm installs, a service start), under a minute on an idle 2-core machine.
describe.concurrent('the documented commands, run as written', { timeout: 240_000 }, () => {
  it('README: sign up, create a key and make a paid call with curl', async () => {
    const [signup, comment, key1, key2, call1, call2] = await docBlock('README.md', [
      `curl -s -c jar -H 'content-type: application/json' \\`,
      `  -d '{"email":"me@example.com","password":"a long password"}' http://127.0.0.1:8787/auth/signup`,
      '# create an API key with the session (the CSRF token is in the farebox_csrf cookie)',
      `curl -s -b jar -H "x-csrf-token: $(awk '/farebox_csrf/ {print $7}' jar)" \\`,
      `  -H 'content-type: application/json' -d '{"name":"cli"}' http://127.0.0.1:8787/v1/api-keys`,
      `curl -s -H 'Authorization: Bearer sk_live_...' -H 'content-type: application/json' \\`,
      `  -d '{"service":"echo","payload":{"hello":"world"}}' http://127.0.0.1:8787/v1/call`,
    ]).then((l) => [`${l[0]}\n${l[1]}`, l[2], l[3], l[4], l[5], l[6]]);
    const cwd = await mkdtemp(join(home, 'curl-'));
    expect(JSON.parse((await ok(signup!, { cwd })).out)).toMatchObject({ email: 'me@example.com' });
    const created = JSON.parse((await ok(`${comment}\n${key1}\n${key2}`, { cwd })).out) as { key: string };
    expect(created.key).toMatch(/^sk_live_/);
    const paid = JSON.parse((await ok(`${call1}\n${call2}`.replace('sk_live_...', created.key), { cwd })).out);
    expect(paid).toMatchObject({ result: { echo: { hello: 'world' } } });
  });

  it('README: the checkout commands (pnpm farebox, pnpm farebox-devnet) reach the real programs', async () => {
    const lines = await docBlock('README.md', [
      'pnpm farebox --help                              # the CLI (apps/cli)',
      'pnpm farebox login --api-key sk_live_...         # the demo key npm start prints',
      'pnpm farebox search echo',
      `pnpm farebox call echo '{"hello":"world"}'`,
      'pnpm farebox-devnet --help                       # the devnet alone (packages/devnet)',
    ]);
    expect((await ok(lines[0]!)).out).toContain('Usage: farebox');
    await ok(lines[1]!);
    expect((await ok(lines[2]!)).out).toContain('echo');
    expect((await ok(lines[3]!)).out).toContain('"hello": "world"');
    expect((await ok(lines[4]!)).out).toContain('farebox-devnet: a local Stellar network');
  });

  it('apps/cli: pnpm farebox login signs in through the browser', async () => {
    const [login] = await docBlock('apps/cli/README.md', ['pnpm farebox login     # today: from the root of a Farebox checkout (after pnpm install)']);
    const child = spawn('sh', ['-c', login!], { cwd: repo, env: { ...env, FAREBOX_CONFIG_DIR: join(home, 'login-cfg') }, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d));
    const closed = new Promise<number | null>((r) => child.on('close', r));
    const url = await eventually('the sign-in address is printed', () => /https?:\/\/\S+\/authorize\?\S+/.exec(err)?.[0], { timeoutMs: 40_000 }).catch(
      (e: Error) => {
        throw new Error(`${e.message}; stderr so far:\n${err}`);
      },
    );
    expect((await browserSignIn(h.url, url, alice)).callbackStatus).toBe(200);
    expect(await closed, err).toBe(0);
  });

  it('README and packages/provider: the tarballs of pnpm tarballs install in a project and import', async () => {
    const [pack, install] = await docBlock('README.md', [
      'pnpm tarballs ~/farebox-tarballs @farebox/provider   # in the checkout',
      'mkdir -p ~/my-project && cd ~/my-project && npm i ~/farebox-tarballs/*.tgz',
    ]);
    // The package READMEs give the same two commands, one per public package (the devnet's says it in a sentence).
    const published = (await readdir(join(repo, 'packages'))).filter((d) => {
      const manifest = join(repo, 'packages', d, 'package.json');
      return existsSync(manifest) && !JSON.parse(readFileSync(manifest, 'utf8')).private;
    });
    expect(published).toEqual(expect.arrayContaining(['provider', 'client', 'ledger', 'devnet']));
    expect(await readFile(join(repo, 'packages/devnet/README.md'), 'utf8')).toContain('`pnpm tarballs <folder> @farebox/devnet`');
    for (const short of published.filter((d) => d !== 'devnet')) {
      await docBlock(`packages/${short}/README.md`, [
        `pnpm tarballs ~/farebox-tarballs @farebox/${short}`,
        'npm i ~/farebox-tarballs/*.tgz',
        '# once it is published',
      ]);
      // Its snippets are ES modules, and it says how to run them in a fresh `npm init -y` folder (issue 50).
      expect(await readFile(join(repo, `packages/${short}/README.md`), 'utf8'), short).toContain(
        'The snippets below are ES modules (`import`, top-level `await`): in a fresh\n`npm init -y` folder run `npm pkg set type=module` first',
      );
    }
    expect((await ok(pack!)).out).toMatch(/farebox-provider-\d+\.\d+\.\d+\.tgz/);
    await ok(install!);
    const imported = await ok(`node --input-type=module -e "const m = await import('@farebox/provider'); console.log(typeof m.createProvider)"`, {
      cwd: join(home, 'my-project'),
    });
    expect(imported.out.trim()).toBe('function');
    // The provider README's own service, run as written from its tarballs, is e2e/publisher-journey.test.ts (npm init -y, npm pkg set type=module).
  });

  it('README: farebox init --tarballs, npm install and npm start publish a service that takes paid calls', async () => {
    const [init, run] = await docBlock('README.md', [
      'pnpm farebox init ~/my-service --tarballs',
      "cd ~/my-service && npm install && npm start   # with npm start's stack running",
    ]);
    expect((await ok(init!)).out).toContain('farebox-packages/farebox-provider-');
    await background(run!, /registry: registered "my-service"/, { extra: { PORT: '0' } });
    await h.gw.core.mirror.syncOnce();
    const call = await ok(`pnpm farebox call my-service '{"text":"hello"}' --api-key ${alice.key}`);
    expect(call.out).toContain('"reversed": "olleh"');
  });

  it('apps/mcp: the Claude Desktop set-up of a checkout, and pnpm farebox-mcp, serve the tools', async () => {
    const mcpReadme = 'apps/mcp/README.md';
    const [pnpmLine] = await docBlock(mcpReadme, ['pnpm farebox-mcp   # today: from the root of a Farebox checkout (after pnpm install)']);
    const config = await docBlock(mcpReadme, [
      '{',
      '  "mcpServers": {',
      '    "farebox": {',
      '      "command": "node",',
      '      "args": ["/path/to/farebox/apps/mcp/dist/main.js"],',
      '      "env": {',
      '        "FAREBOX_URL": "http://127.0.0.1:8787"',
      '      }',
      '    }',
      '  }',
      '}',
    ]);
    const server = JSON.parse(real(config.join('\n'))).mcpServers.farebox as { command: string; args: string[]; env: Record<string, string> };
    // With an API key, as the README's variant adds it (no browser sign-in).
    const adapters = [
      { command: server.command, args: server.args, env: { ...env, ...server.env, FAREBOX_API_KEY: alice.key } },
      { command: 'sh', args: ['-c', pnpmLine!], env: { ...env, FAREBOX_API_KEY: alice.key } },
    ];
    for (const adapter of adapters) {
      const client = new Client({ name: 'doc-test', version: '1.0.0' });
      await client.connect(new StdioClientTransport({ ...adapter, cwd: repo, stderr: 'pipe' }));
      try {
        expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['list_agents', 'call_agent', 'get_balance', 'get_transactions']);
        const call = await client.callTool({ name: 'call_agent', arguments: { service: 'echo', payload: { from: adapter.command } } });
        expect(call.structuredContent).toMatchObject({ result: { echo: { from: adapter.command } } });
      } finally {
        await client.close();
      }
    }
  });

  it('docs/devnet.md and packages/devnet: pnpm farebox-devnet runs a devnet', async () => {
    const [line] = await docBlock('docs/devnet.md', [
      "pnpm farebox-devnet --port 8000 --data-dir .farebox/devnet   # from the checkout's root; or: startDevnet() in-process",
    ]);
    await docBlock('packages/devnet/README.md', ["pnpm farebox-devnet --port 8000 --data-dir .farebox/devnet   # from the checkout's root"]);
    const port = await freePort();
    const dataDir = join(home, 'devnet');
    await background(line!.replace('--port 8000', `--port ${port}`).replace('.farebox/devnet', dataDir), /listening on/);
    const rpc = await fetch(`http://127.0.0.1:${port}/soroban/rpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getHealth' }),
    });
    expect(await rpc.json()).toMatchObject({ result: { status: 'healthy' } });
  });
});
