// `npm start` as a person sees it: scripts/start.mjs (what `npm start` runs
// after its install and build) on a free port and a fresh data folder, its
// output read as it comes. The banner is the last block printed at start and
// nothing follows it while the stack idles; the stack's own traffic (devnet
// polling, health probes) writes no request line at the default level; the
// request lines are short readable ones, not JSON; the banner's curl line works.
// The search model: a loopback HTTP server in the Hugging Face layout stands
// in for the hub (the test kit's tiny model under the default id), so the
// start fetches it in the background and turns hybrid without a restart; a
// hub that cannot be reached leaves it keyword-only, saying how to get the model.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, symlink } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventually } from '@farebox/test-kit';
import { writeTinyModel } from '@farebox/test-kit/tiny-model';
import { CLI_BIN } from './cli.js';

const repo = join(import.meta.dirname, '..');
const MODEL_ID = 'Xenova/multilingual-e5-small';
const children: ChildProcess[] = [];
let hub: Server;
let hubUrl: string;
let releaseWeights: () => void = () => undefined;
const weights = new Promise<void>((resolve) => {
  releaseWeights = resolve;
});

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
  const hubRoot = await mkdtemp(join(tmpdir(), 'farebox-start-hub-'));
  await writeTinyModel(hubRoot, MODEL_ID, 'model_quantized.onnx');
  hub = createHttpServer(async (req, res) => {
    const m = /^\/(.+?\/.+?)\/resolve\/main\/(.+)$/.exec(decodeURIComponent(new URL(req.url ?? '/', 'http://hub').pathname));
    const file = m && m[1] === MODEL_ID && !m[2]!.includes('..') ? join(hubRoot, ...MODEL_ID.split('/'), m[2]!) : null;
    if (!file || !existsSync(file)) return void res.writeHead(404).end('Entry not found');
    // The weights wait for the test: the download is under way until then.
    if (file.endsWith('.onnx')) await weights;
    const body = await readFile(file);
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(body.length) }).end(body);
  });
  await new Promise<void>((resolve) => hub.listen(0, '127.0.0.1', resolve));
  hubUrl = `http://127.0.0.1:${(hub.address() as AddressInfo).port}/`;
});

/** Stops the stacks this file started (each its own process group). */
async function stopAll() {
  for (const child of children.splice(0)) {
    if (child.exitCode !== null) continue;
    const exited = new Promise((r) => child.once('exit', r));
    process.kill(-child.pid!, 'SIGTERM');
    await exited;
  }
}

afterAll(async () => {
  releaseWeights();
  await stopAll();
  await new Promise((resolve) => hub?.close(resolve));
});

const END = /Ctrl-C stops everything\.[^\n]*\n=+\n/;

/** Runs scripts/start.mjs with a fresh data folder and model folder; resolves at its banner with its output so far and a reader of what follows. */
async function npmStart(extra: Record<string, string>) {
  const port = await freePort();
  const dataDir = await mkdtemp(join(tmpdir(), 'farebox-start-'));
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? tmpdir(),
    PORT: String(port),
    FAREBOX_DATA_DIR: dataDir,
    FAREBOX_MODEL_DIR: join(dataDir, 'models'),
    ...extra,
  };
  const child = spawn(process.execPath, [join(repo, 'scripts', 'start.mjs')], { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d));
  child.stderr!.on('data', (d: Buffer) => (out += d));
  await eventually('the banner is printed', () => END.test(out) || child.exitCode !== null, { timeoutMs: 150_000, intervalMs: 200 });
  expect(child.exitCode, out).toBeNull();
  const atBanner = out.length;
  const lines = out.split('\n');
  const top = lines.findIndex((l) => l.includes('Farebox is running'));
  expect(top).toBeGreaterThan(0);
  return { port, env, lines, top, banner: lines.slice(top - 1).join('\n'), after: () => out.slice(atBanner) };
}

it('npm start prints its banner last, after no line of its own polling, with short request lines and a curl line that makes a paid call; the search model it fetches in the background turns search hybrid', async () => {
  const { port, env, lines, top, banner, after } = await npmStart({ FAREBOX_MODEL_HUB_URL: hubUrl });
  // The stack idles: its devnet polling (every 500 ms) and anything else would print within these seconds.
  await new Promise((r) => setTimeout(r, 4000));
  expect(after(), 'printed after the banner').toBe('');

  expect(banner).toMatch(/^={72}\n {2}Farebox is running\n/);
  expect(banner).toContain(`  gateway     http://127.0.0.1:${port}`);
  // The model is still downloading (the hub holds its weights): keyword-only for now, and it says so.
  expect(banner).toMatch(/\n {2}search {6}keyword-only for now: embedding model is downloading[^\n]*\(no restart needed\)\n/);
  expect(banner).toMatch(/\n {2}demo login {2}demo@farebox\.local \/ \S+/);
  // Settlement you can watch: every minute here, and the command that pays out now (issue 50).
  expect(banner).toContain('\n  settlement  publishers are paid out every 1m (FAREBOX_SETTLEMENT_INTERVAL); now: pnpm farebox publisher settle\n');
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

  // The weights arrive: the running stack says so and answers hybrid, every service it had indexed embedded.
  const base = `http://127.0.0.1:${port}`;
  expect((await (await fetch(`${base}/v1/agents?q=echo`, { headers: { authorization: `Bearer ${key}` } })).json())[0]).toMatchObject({
    service: 'echo',
    search_mode: 'keyword',
  });
  releaseWeights();
  await eventually('search turns hybrid', () => /search is hybrid now/.test(after()), { timeoutMs: 60_000, intervalMs: 200 });
  await eventually(
    'the indexed services are embedded',
    async () => {
      const search = ((await (await fetch(`${base}/health`)).json()) as { search: { mode: string; vectors: number; pendingEmbeddings: number } }).search;
      return search.mode === 'hybrid' && search.vectors >= 2 && search.pendingEmbeddings === 0;
    },
    { timeoutMs: 60_000, intervalMs: 200 },
  );
  expect(after()).toMatch(/% downloaded/);
  expect((await (await fetch(`${base}/v1/agents?q=echo`, { headers: { authorization: `Bearer ${key}` } })).json())[0]).toMatchObject({
    service: 'echo',
    search_mode: 'hybrid',
  });
  expect(existsSync(join(env.FAREBOX_MODEL_DIR!, ...MODEL_ID.split('/'), 'onnx', 'model_quantized.onnx'))).toBe(true);
  await stopAll();
}, 300_000);

it('npm start where the model cannot be fetched: one line above the banner says search is keyword-only and how to get the model, and so does the banner', async () => {
  // A hub address nothing listens on: the download fails at once, as offline.
  const { lines, top, banner } = await npmStart({ FAREBOX_MODEL_HUB_URL: `http://127.0.0.1:${await freePort()}/` });
  const said = lines.slice(0, top - 1).filter((l) => /search is keyword-only/.test(l));
  expect(said).toHaveLength(1);
  expect(said[0]).toMatch(/farebox model fetch/);
  expect(said[0]).toMatch(/FAREBOX_MODEL_DIR/);
  // Said once: readiness does not repeat it as a dependency warning.
  expect(lines.filter((l) => /model is down/.test(l))).toEqual([]);
  const line = /\n {2}search {6}(.*)\n/.exec(banner)?.[1];
  expect(line).toMatch(/^keyword-only: /);
  expect(line).toMatch(/farebox model fetch/);
  expect(line).toMatch(/FAREBOX_MODEL_DIR/);
  expect(line).not.toMatch(/hybrid/);
}, 240_000);

it('farebox dev outside a checkout (the gateway binary) fetches the search model in the background too, and turns hybrid', async () => {
  releaseWeights();
  const cwd = await mkdtemp(join(tmpdir(), 'farebox-dev-project-'));
  const port = await freePort();
  // farebox-gateway on the PATH, as an installed @farebox/gateway puts it: the package's bin, linked here
  // (pnpm links a workspace bin only when its target existed at install time, which a fresh clone's did not).
  const bin = join(cwd, 'bin');
  await mkdir(bin);
  await symlink(join(repo, 'apps', 'gateway', 'dist', 'main.js'), join(bin, 'farebox-gateway'));
  const env: Record<string, string> = {
    PATH: `${bin}:${process.env.PATH ?? ''}`,
    HOME: cwd,
    FAREBOX_MODEL_DIR: join(cwd, 'models'),
    FAREBOX_MODEL_HUB_URL: hubUrl,
  };
  const child = spawn(process.execPath, [CLI_BIN, 'dev', '--port', String(port)], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d));
  child.stderr!.on('data', (d: Buffer) => (out += d));
  await eventually('search turns hybrid', () => /search is hybrid now/.test(out) || child.exitCode !== null, { timeoutMs: 120_000, intervalMs: 200 });
  expect(child.exitCode, out).toBeNull();
  expect(out).toMatch(/Starting the local stack \(\S*farebox-gateway\)/);
  expect(out).toMatch(/downloading the embedding model/);
  const health = (await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as { search: { mode: string } };
  expect(health.search.mode).toBe('hybrid');
  await stopAll();
}, 180_000);
