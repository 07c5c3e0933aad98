import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair } from '@stellar/stellar-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAmount } from '@farebox/protocol';
import { createRegistryClient, keypairSigner } from '@farebox/stellar';
import { writeTinyModel } from '@farebox/test-kit/tiny-model';
import { dashboardDir } from '../src/index.js';
import { launchChromium } from './chromium-kit.js';
import { startHarness, type Harness, type TestUser } from './harness.js';
import { rawClient } from './oauth-browser.js';

// Issue 35, items 1 and 2: `GET /v1/agents?q=` (and the MCP list_agents) rank
// strong keyword matches by their raw score, not by name, and say which
// ranking served the search; a gateway whose model is missing fetches it in
// the background and turns hybrid without a restart.

/** The weather-forecast service, and one that mentions weather only once. */
const SERVICES = [
  { name: 'city-guide', description: 'Museums and restaurants, with the weather.' },
  // Mostly words the test kit's tiny model knows, so its vector is close to "weather" in any language.
  { name: 'weather-forecast', description: 'Weather forecast and weather for the city.' },
  { name: 'bakery-hours', description: 'Opening hours of bakeries in the city centre.' },
];

/** Registers the services on the devnet registry, each with its own funded owner, pointing at `endpoint`. */
async function register(h: Harness, endpoint: string) {
  const registry = createRegistryClient(h.gw.core.network);
  for (const s of SERVICES) {
    const kp = Keypair.random();
    await h.gw.devnet!.friendbot(kp.publicKey());
    await registry.register(keypairSigner(kp.secret()), { service: s.name, pricePerCall: parseAmount('0.01'), endpoint, description: s.description });
  }
  await h.gw.core.mirror.syncOnce();
}

/** The gateway's default model id, and where it lives in a model directory (the Hugging Face layout, docs/search.md). */
const DEFAULT_MODEL_ID = 'Xenova/multilingual-e5-small';
const modelPath = (dir: string) => join(dir, ...DEFAULT_MODEL_ID.split('/'));

const names = (body: Array<{ service: string }>) => body.map((s) => s.service);

/** What the dashboard's catalog says about the search that served `q` (its line under the search box), in Chromium. */
async function catalogSearchLine(h: Harness, u: TestUser, q: string): Promise<string> {
  const dist = dashboardDir();
  if (!dist) throw new Error('@farebox/dashboard is not installed: run pnpm install');
  const built =
    existsSync(join(dist, 'assets')) &&
    readdirSync(join(dist, 'assets')).some((f) => f.endsWith('.js') && readFileSync(join(dist, 'assets', f), 'utf8').includes('search-mode'));
  if (!built) execFileSync('pnpm', ['--filter', '@farebox/dashboard', 'run', 'build'], { cwd: join(import.meta.dirname, '..', '..', '..'), stdio: 'inherit' });
  const browser = await launchChromium(h.url);
  try {
    await browser.context.addCookies(u.cookie.split('; ').map((c) => ({ name: c.slice(0, c.indexOf('=')), value: c.slice(c.indexOf('=') + 1), url: h.url })));
    await browser.page.goto(`/catalog?q=${encodeURIComponent(q)}`);
    await browser.page.getByRole('list', { name: `Results for ${q}` }).waitFor();
    return (await browser.page.getByTestId('search-mode').innerText()).trim();
  } finally {
    await browser.close();
  }
}

describe('catalog search without a model: ranked by relevance, and says it is keyword-only', () => {
  let h: Harness;
  let u: TestUser;
  let modelDir: string;

  beforeAll(async () => {
    modelDir = await mkdtemp(join(tmpdir(), 'farebox-no-model-'));
    h = await startHarness('pglite', { modelDir, allowModelDownload: false });
    u = await h.user();
    await register(h, 'http://127.0.0.1:9/');
  }, 120_000);
  afterAll(async () => {
    await h?.close();
    await rm(modelDir, { recursive: true, force: true });
  });

  it('puts the weather-forecast service first for ?q=weather, above the one that mentions weather once (the old cap tied them and ranked by name)', async () => {
    const r = await u.api('/v1/agents?q=weather');
    expect(r.status).toBe(200);
    expect(names(r.body)).toEqual(['weather-forecast', 'city-guide']);
    expect(r.body[0].score).toBeGreaterThan(r.body[1].score);
    for (const s of r.body) expect(s.search_mode).toBe('keyword');
    // Without a query the catalog is listed, and no search mode is claimed.
    for (const s of (await u.api('/v1/agents')).body) expect(s).not.toHaveProperty('search_mode');
    expect((await u.api('/health')).body.search).toMatchObject({ mode: 'keyword-only', reason: expect.stringContaining('farebox model fetch') });
    expect(h.logs().some((l) => l.includes('search is keyword-only') && l.includes('farebox model fetch'))).toBe(true);
    // The dashboard does not claim hybrid search.
    expect(await catalogSearchLine(h, u, 'weather')).toMatch(/^Keyword search \(BM25\) only: the gateway has no embedding model loaded/);
  }, 120_000);

  it('ranks the same way through the MCP list_agents tool', async () => {
    const { tokens } = await (await rawClient(h.url)).authorize(u);
    const res = await fetch(`${h.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${tokens.access_token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_agents', arguments: { query: 'weather' } } }),
    });
    expect(res.status).toBe(200);
    // A server-sent event stream of one message: its `data:` line is the JSON-RPC answer.
    const data = (await res.text()).split('\n').find((l) => l.startsWith('data: '))!;
    const out = (JSON.parse(data.slice(6)) as { result: { structuredContent: { services: Array<{ service: string; search_mode: string }> } } }).result
      .structuredContent;
    expect(names(out.services)).toEqual(['weather-forecast', 'city-guide']);
    expect(out.services.map((s) => s.search_mode)).toEqual(['keyword', 'keyword']);
  });
});

describe('a gateway whose model is missing fetches it in the background and turns hybrid', () => {
  let h: Harness;
  let u: TestUser;
  let hub: Server;
  let hubRoot: string;
  let modelDir: string;
  let releaseWeights: () => void = () => undefined;
  const weights = new Promise<void>((resolve) => {
    releaseWeights = resolve;
  });

  beforeAll(async () => {
    // A loopback server in the Hugging Face layout stands in for the hub, serving the test kit's tiny model under the default id.
    hubRoot = await mkdtemp(join(tmpdir(), 'farebox-hub-'));
    await writeTinyModel(hubRoot, DEFAULT_MODEL_ID, 'model_quantized.onnx');
    hub = createServer(async (req, res) => {
      const m = /^\/(.+?\/.+?)\/resolve\/main\/(.+)$/.exec(decodeURIComponent(new URL(req.url ?? '/', 'http://hub').pathname));
      const file = m && m[1] === DEFAULT_MODEL_ID && !m[2]!.includes('..') ? join(modelPath(hubRoot), m[2]!) : null;
      if (!file || !existsSync(file)) return void res.writeHead(404).end('Entry not found');
      // The weights wait for the test: the download is in progress until then.
      if (file.endsWith('.onnx')) await weights;
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(body.length) }).end(body);
    });
    await new Promise<void>((resolve) => hub.listen(0, '127.0.0.1', resolve));
    modelDir = await mkdtemp(join(tmpdir(), 'farebox-models-'));
    h = await startHarness('pglite', {
      modelDir,
      allowModelDownload: true,
      modelHubUrl: `http://127.0.0.1:${(hub.address() as AddressInfo).port}/`,
    });
    u = await h.user();
    await register(h, 'http://127.0.0.1:9/');
  }, 120_000);
  afterAll(async () => {
    releaseWeights();
    await h?.close();
    await new Promise((resolve) => hub?.close(resolve));
    await rm(hubRoot, { recursive: true, force: true });
    await rm(modelDir, { recursive: true, force: true });
  });

  it('answers keyword-only while downloading, then the same running gateway finds a service from a query in another language', async () => {
    // "weather forecast" in Spanish: no shared word with any description.
    const spanish = `/v1/agents?q=${encodeURIComponent('pronóstico del tiempo')}`;
    expect((await u.api('/health')).body.search).toMatchObject({ mode: 'keyword-only', reason: expect.stringMatching(/^embedding model is downloading/) });
    // Readiness stays 200, naming the model degraded and what callers notice (issue 39).
    const ready = await u.api('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({
      status: 'degraded',
      dependencies: { model: { state: 'down', required: false, effect: 'search is keyword-only (no semantic ranking)' } },
    });
    expect((await u.api(spanish)).body).toEqual([]);
    const keyword = (await u.api('/v1/agents?q=weather')).body;
    expect(names(keyword)).toEqual(['weather-forecast', 'city-guide']);
    expect(keyword[0].search_mode).toBe('keyword');

    releaseWeights();
    // Until the model is loaded and the services indexed so far are embedded (no restart).
    for (let i = 0; ; i++) {
      const search = (await u.api('/health')).body.search;
      if (search.mode === 'hybrid' && search.vectors === SERVICES.length && search.pendingEmbeddings === 0) break;
      if (i > 600) throw new Error(`search did not turn hybrid: ${JSON.stringify(search)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const found = (await u.api(spanish)).body;
    expect(names(found)).toEqual(['weather-forecast']);
    expect(found[0].search_mode).toBe('hybrid');
    expect((await u.api('/v1/agents?q=weather')).body[0]).toMatchObject({ service: 'weather-forecast', search_mode: 'hybrid' });
    expect(await catalogSearchLine(h, u, 'pronóstico del tiempo')).toBe('Hybrid search: keywords (BM25) and meaning (multilingual embeddings).');

    // Ready with the model up now. A model never loaded is the search index's news alone (its download
    // lines below): readiness does not repeat it as a dependency going down and coming back.
    expect((await u.api('/health/ready')).body.dependencies.model).toMatchObject({ state: 'up', required: false });
    expect(
      h
        .logs()
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l.event === 'dependency' && l.dependency === 'model'),
    ).toEqual([]);
    const lines = h.logs().filter((l) => l.includes('"search_model"'));
    expect(lines.some((l) => l.includes('downloading the embedding model'))).toBe(true);
    expect(lines.some((l) => l.includes('% downloaded'))).toBe(true);
    expect(lines.some((l) => l.includes('search is hybrid now'))).toBe(true);
    // Stored in the model directory: the next start loads it without the network.
    expect(existsSync(join(modelPath(modelDir), 'onnx', 'model_quantized.onnx'))).toBe(true);
  }, 120_000);
});
