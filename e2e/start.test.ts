// `npm start` as a person sees it: scripts/start.mjs (what `npm start` runs
// after its install and build) on a free port and a fresh data folder, its
// output read as it comes. The banner is the last block printed at start and
// nothing follows it while the stack idles; the stack's own traffic (devnet
// polling, health probes) writes no request line at the default level; the
// request lines are short readable ones, not JSON; the banner's curl line works.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { eventually } from '@farebox/test-kit';

const repo = join(import.meta.dirname, '..');
let child: ChildProcess | undefined;

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

afterAll(async () => {
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((r) => child!.once('exit', r));
  process.kill(-child.pid!, 'SIGTERM');
  await exited;
});

it('npm start prints its banner last, after no line of its own polling, with short request lines and a curl line that makes a paid call', async () => {
  const port = await freePort();
  const dataDir = await mkdtemp(join(tmpdir(), 'farebox-start-'));
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir(), PORT: String(port), FAREBOX_DATA_DIR: dataDir };
  child = spawn(process.execPath, [join(repo, 'scripts', 'start.mjs')], { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d));
  child.stderr!.on('data', (d: Buffer) => (out += d));

  const END = /Ctrl-C stops everything\.[^\n]*\n=+\n/;
  await eventually('the banner is printed', () => END.test(out) || child!.exitCode !== null, { timeoutMs: 150_000, intervalMs: 200 });
  expect(child.exitCode, out).toBeNull();
  // The stack idles: its devnet polling (every 500 ms) and anything else would print within these seconds.
  const atBanner = out.length;
  await new Promise((r) => setTimeout(r, 4000));
  expect(out.slice(atBanner), 'printed after the banner').toBe('');

  const lines = out.split('\n');
  const top = lines.findIndex((l) => l.includes('Farebox is running'));
  expect(top).toBeGreaterThan(0);
  const banner = lines.slice(top - 1).join('\n');
  expect(banner).toMatch(/^={72}\n {2}Farebox is running\n/);
  expect(banner).toContain(`  gateway     http://127.0.0.1:${port}`);
  expect(banner).toMatch(/\n {2}search {6}keyword-only|\n {2}search {6}hybrid/);
  expect(banner).toMatch(/\n {2}demo login {2}demo@farebox\.local \/ \S+/);
  const key = /\n {2}API key {5}(sk_live_\S+)/.exec(banner)?.[1];
  expect(key).toBeDefined();

  // Above the banner: the start's own requests in short lines; never a devnet, health or unmatched line, never JSON.
  const before = lines.slice(0, top - 1);
  const requestLines = before.filter((l) => /^\[gateway\] \d\d:\d\d:\d\d\.\d{3} INFO {2}(GET|POST|PUT|DELETE) /.test(l));
  expect(requestLines.some((l) => / POST \/auth\/signup 201 /.test(l))).toBe(true);
  expect(before.filter((l) => /\/devnet|\/health|unmatched|"level":/.test(l) && /INFO|"level":/.test(l))).toEqual([]);

  // The banner's curl line, run by a shell as a person would paste it.
  const payload = `'{"service":"echo","payload":{"hello":"world"}}'`;
  const curl = banner.slice(banner.indexOf('    curl -s'), banner.indexOf(payload) + payload.length);
  const paid = await new Promise<string>((resolve, reject) => {
    const sh = spawn('sh', ['-c', curl], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let body = '';
    sh.stdout.on('data', (d: Buffer) => (body += d));
    sh.on('error', reject);
    sh.on('close', () => resolve(body));
  });
  expect(JSON.parse(paid)).toMatchObject({ result: { echo: { hello: 'world' } } });
}, 240_000);
