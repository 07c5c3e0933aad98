#!/usr/bin/env node
// `npm start`: the whole local stack in one command. Starts the gateway (PGlite
// in FAREBOX_DATA_DIR, the embedded devnet, the dashboard when built), then the
// example services, which bootstrap themselves into the devnet's registry, then
// a demo account with an API key, and prints a curl command that makes a paid
// call. Ctrl-C stops everything.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const port = Number(process.env.PORT ?? 8787);
const dataDir = resolve(process.env.FAREBOX_DATA_DIR ?? join(root, '.farebox'));
// The embedded devnet stands in for Stellar testnet (the gateway, the examples and their SDKs read this), so stock x402
// clients pay `exact`. A data folder made by an earlier start under the local passphrase keeps it (its accounts and
// contracts belong to that network), and says how to get the testnet stand-in.
if (process.env.FAREBOX_DEVNET_PASSPHRASE === undefined) {
  let stored;
  try {
    stored = JSON.parse(readFileSync(join(dataDir, 'devnet', 'state.json'), 'utf8')).passphrase ?? 'Standalone Network ; February 2017';
  } catch {
    stored = undefined;
  }
  if (stored === 'Standalone Network ; February 2017') {
    process.env.FAREBOX_DEVNET_PASSPHRASE = 'local';
    console.log(
      `devnet: ${dataDir} holds a devnet made under the local passphrase; it runs as it was, without x402 exact. For the testnet stand-in (exact), start with another FAREBOX_DATA_DIR or remove that folder.`,
    );
  } else process.env.FAREBOX_DEVNET_PASSPHRASE = 'testnet';
}
const base = process.env.FAREBOX_BASE_URL ?? `http://127.0.0.1:${port}`;
/** How often the local stack pays publishers out (the gateway's default, 1 h, is for production). */
const settlementInterval = process.env.FAREBOX_SETTLEMENT_INTERVAL ?? '1m';
const children = [];
/** When a child last printed a line (the banner waits for a quiet moment, so it is the last block printed at start). */
let lastOutput = Date.now();
/** The examples that have printed their `registry:` line (the banner waits for each one's). */
const reported = new Set();
/** Colours and bold in the banner and the gateway's lines when a person watches this terminal. */
const colors = process.stdout.isTTY === true && !process.env.NO_COLOR;

function start(name, cmd, args, env, cwd = root) {
  const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const prefix = `[${name}] `;
  const relay = (stream, out) => {
    let buf = '';
    stream.on('data', (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        out.write(`${prefix}${line}\n`);
        lastOutput = Date.now();
        if (line.startsWith('registry: ')) reported.add(name);
        buf = buf.slice(i + 1);
      }
    });
  };
  relay(child.stdout, process.stdout);
  relay(child.stderr, process.stderr);
  child.on('exit', (code, signal) => {
    if (!stopping) {
      console.error(`${prefix}exited (${signal ?? code}); stopping the stack`);
      stop(1);
    }
  });
  children.push(child);
  return child;
}

let stopping = false;
function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  for (const c of children) c.kill('SIGTERM');
  setTimeout(() => process.exit(code), 1500).unref();
}
process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));
// A part that failed stops the stack; what was waiting on it has nothing to add.
process.on('unhandledRejection', (err) => {
  if (stopping) return;
  console.error(`start failed: ${err instanceof Error ? err.message : String(err)}`);
  stop(1);
});

async function waitFor(url, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const r = await fetch(url);
      if (r.ok) return r.json();
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${url}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function json(path, init = {}) {
  const r = await fetch(`${base}${path}`, { ...init, headers: { 'content-type': 'application/json', ...init.headers } });
  const body = await r.json().catch(() => ({}));
  return { status: r.status, body, headers: r.headers };
}

/** A demo account kept in dataDir/demo.json (mode 0600) so restarts reuse it. */
async function demoAccount() {
  const file = join(dataDir, 'demo.json');
  if (existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, 'utf8'));
    const me = await json('/v1/me', { headers: { authorization: `Bearer ${saved.apiKey}` } });
    if (me.status === 200) return saved;
  }
  const email = 'demo@farebox.local';
  const password = `demo-${Math.random().toString(36).slice(2)}-${Date.now()}`;
  const res = await json('/auth/signup', { method: 'POST', body: JSON.stringify({ email, password }) });
  if (res.status === 409) throw new Error(`${email} exists but ${file} is missing: remove ${dataDir} to start fresh`);
  if (res.status !== 201) throw new Error(`demo sign-up failed: ${JSON.stringify(res.body)}`);
  const cookie = res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const key = await json('/v1/api-keys', { method: 'POST', headers: { cookie, 'x-csrf-token': res.body.csrf_token }, body: JSON.stringify({ name: 'demo' }) });
  const saved = { email, password, apiKey: key.body.key };
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(file, JSON.stringify(saved, null, 2), { mode: 0o600 });
  chmodSync(file, 0o600);
  return saved;
}

const gatewayMain = join(root, 'apps', 'gateway', 'dist', 'main.js');
if (!existsSync(gatewayMain)) {
  console.error('the gateway is not built: run `npm start` (it builds first) or `pnpm build`');
  process.exit(1);
}
console.log(`starting the Farebox stack in ${dataDir}`);
// The example services listen on 127.0.0.1: this local stack lets the gateway
// call loopback endpoints (never its own port; refused on mainnet).
start('gateway', process.execPath, [gatewayMain], {
  PORT: String(port),
  FAREBOX_DATA_DIR: dataDir,
  // The local stack runs on the embedded devnet (the default network is testnet).
  STELLAR_NETWORK: process.env.STELLAR_NETWORK ?? process.env.FAREBOX_NETWORK ?? 'local',
  FAREBOX_ALLOW_LOOPBACK_ENDPOINTS: process.env.FAREBOX_ALLOW_LOOPBACK_ENDPOINTS ?? 'true',
  // Search is hybrid where the network allows: a missing embedding model downloads in the background
  // on first start (the gateway logs its progress, then "search is hybrid now"); offline, keyword-only.
  FAREBOX_ALLOW_MODEL_DOWNLOAD: process.env.FAREBOX_ALLOW_MODEL_DOWNLOAD ?? 'true',
  // One short readable line per request (FAREBOX_LOG_PRETTY=false: JSON lines, as in production),
  // coloured when this script's output is a terminal (the gateway writes through a pipe).
  FAREBOX_LOG_PRETTY: process.env.FAREBOX_LOG_PRETTY ?? 'true',
  // Earnings are paid out every minute here, so a publisher sees the release while watching (1 h elsewhere).
  FAREBOX_SETTLEMENT_INTERVAL: settlementInterval,
  ...(colors && process.env.FORCE_COLOR === undefined ? { FORCE_COLOR: '1' } : {}),
});
await waitFor(`${base}/health`);
const key = await (await fetch(`${base}/v1/platform/key`)).json();

/** A port nothing listens on now (the kernel picks it). */
function freePort() {
  return new Promise((resolvePort, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port: p } = s.address();
      s.close(() => resolvePort(p));
    });
  });
}

// FAREBOX_EXAMPLE_PORTS=4101,4102 pins the examples' ports; by default they take
// free ones, so two stacks on one machine (another PORT and FAREBOX_DATA_DIR)
// do not collide. The examples update their registered endpoint when it moves.
const pinned = (process.env.FAREBOX_EXAMPLE_PORTS ?? '')
  .split(',')
  .map((p) => p.trim())
  .filter(Boolean)
  .map(Number);
if (pinned.some((p) => !Number.isInteger(p) || p < 1 || p > 65535)) {
  console.error('FAREBOX_EXAMPLE_PORTS must be two ports, e.g. 4101,4102');
  process.exit(2);
}
const examples = [
  { name: 'echo', dir: 'examples/echo', port: pinned[0] ?? (await freePort()) },
  { name: 'word-count', dir: 'examples/word-count', port: pinned[1] ?? (await freePort()) },
];
const tsx = join(root, 'node_modules', '.bin', 'tsx');
for (const ex of examples) {
  start(
    ex.name,
    tsx,
    ['--conditions=@farebox/source', 'src/main.ts'],
    {
      PORT: String(ex.port),
      STELLAR_NETWORK: 'local',
      FAREBOX_URL: base,
      FAREBOX_DEVNET_URL: `${base}/devnet`,
      FAREBOX_PLATFORM_PUBLIC_KEY: key.publicKey,
      // Each example creates its own owner key on first start (examples/<name>/.farebox/keypair).
    },
    join(root, ex.dir),
  );
}

// Wait until the examples are in the catalog.
const demo = await demoAccount();
const auth = { authorization: `Bearer ${demo.apiKey}` };
const deadline = Date.now() + 90_000;
for (;;) {
  const list = await json('/v1/agents', { headers: auth });
  const listed = Array.isArray(list.body) ? list.body : [];
  const names = listed.map((s) => s.service);
  // Registered at the address they listen on now (an earlier start may have used other ports).
  // And each example has said so: its own `registry:` line comes above the banner, not after it.
  const inCatalog = examples.every((e) => listed.some((s) => s.service === e.name && s.endpoint === `http://127.0.0.1:${e.port}/`));
  if (inCatalog && examples.every((e) => reported.has(e.name))) break;
  if (Date.now() > deadline) {
    console.error(`the examples did not appear in the catalog (have: ${names.join(', ') || 'none'})`);
    break;
  }
  // Once a second: each check is a request line in the log above the banner.
  await new Promise((r) => setTimeout(r, 1000));
}

/** The search line of the banner: what the gateway's /health says serves searches now. */
function searchLine(health) {
  const search = health?.search;
  if (!search) return 'unknown (see /health)';
  if (search.mode === 'hybrid') return `hybrid (keywords and ${search.model ?? 'the embedding model'})`;
  if (search.mode === 'remote') return `a discovery service at ${search.url}`;
  if (search.download || /^embedding model is (downloading|loading)/.test(search.reason ?? ''))
    return `keyword-only for now: ${search.reason} (no restart needed)`;
  // One line: keyword-only, why, and how to get the model.
  const hint = 'get the model: pnpm farebox model fetch, then restart; or set FAREBOX_MODEL_DIR to a folder that holds it';
  return `${search.mode}${search.reason ? `: ${search.reason}` : ''}${search.reason?.includes('farebox model fetch') ? '' : `; ${hint}`}`;
}

// The lines the start itself caused (its sign-up, its catalog checks) come first: the banner waits
// until the stack has printed nothing for a moment (at most 3 s), so it is the last block at start.
// A model download that fails at once (no network) says so in the banner's search line, not just after it.
const modelDownloading = (h) => Boolean(h?.search?.download) || /^embedding model is downloading/.test(h?.search?.reason ?? '');
let health = await json('/health');
for (const settleBy = Date.now() + 5000; modelDownloading(health.body) && Date.now() < settleBy; health = await json('/health'))
  await new Promise((r) => setTimeout(r, 250));
// Readiness is where the gateway notes each dependency's state (one log line per change): asked here, a
// dependency already down (the model on a machine without its files) is said above the banner, not after it.
await json('/health/ready');
const quietBy = Date.now() + 3000;
while (Date.now() - lastOutput < 400 && Date.now() < quietBy) await new Promise((r) => setTimeout(r, 100));
health = await json('/health');

const bold = (t) => (colors ? `\u001b[1m${t}\u001b[0m` : t);
const green = (t) => (colors ? `\u001b[1;32m${t}\u001b[0m` : t);
const rule = '='.repeat(72);
console.log(`
${green(rule)}
${green('  Farebox is running')}

  gateway     ${base}            (health: ${base}/health)
  dashboard   ${base}/
  devnet      ${base}/devnet      (explorer: ${base}/devnet/explorer/local)
  MCP         ${base}/mcp         (stdio adapter: pnpm farebox-mcp)
${
  process.env.FAREBOX_DEVNET_PASSPHRASE === 'testnet'
    ? `  x402        ${base}/x402        (facilitator; the examples also take x402 exact on stellar:testnet, this devnet)
`
    : ''
}  examples    ${examples.map((e) => `${e.name} http://127.0.0.1:${e.port}/`).join('   ')}
  search      ${searchLine(health.body)}
  settlement  publishers are paid out every ${settlementInterval} (FAREBOX_SETTLEMENT_INTERVAL); now: pnpm farebox publisher settle
  demo login  ${bold(`${demo.email} / ${demo.password}`)}
  API key     ${bold(demo.apiKey)}

  Make a paid call (5 USD of sign-up credit; echo costs 0.001):

    curl -s ${base}/v1/call \\
      -H 'Authorization: Bearer ${demo.apiKey}' \\
      -H 'Content-Type: application/json' \\
      -d '{"service":"echo","payload":{"hello":"world"}}'

  Or with the CLI, from this folder:

    pnpm farebox login --api-key ${demo.apiKey}${base === 'http://127.0.0.1:8787' ? '' : ` --url ${base}`}
    pnpm farebox search echo

  Ctrl-C stops everything. FAREBOX_LOG_LEVEL=debug also shows the stack's own traffic.
${green(rule)}
`);
