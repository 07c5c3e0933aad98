import { createServer, type Server } from 'node:http';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbedder, createSearchIndex, modelPath, type ModelDownloadProgress } from '@farebox/discovery';
import { writeTinyModel } from '@farebox/test-kit/tiny-model';

// Issue 35, item 2: a model missing on first start is fetched in the background
// (here from a loopback server in the Hugging Face layout, standing in for the
// hub); the index answers keyword-only meanwhile and turns hybrid, embedding
// what it already holds, when the model is ready.

let hubRoot: string;
let modelId: string;
let hub: Server;
let hubUrl: string;
const requests: string[] = [];
/** Holds the ONNX weights until the test releases them: the download is "in progress" until then. */
let releaseWeights: () => void = () => undefined;
let weightsGate: Promise<void> = Promise.resolve();

beforeAll(async () => {
  hubRoot = await mkdtemp(join(tmpdir(), 'farebox-hub-'));
  modelId = await writeTinyModel(hubRoot);
  hub = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://hub').pathname);
    requests.push(`${req.method} ${path}`);
    // <owner>/<name>/resolve/<revision>/<file>, as huggingface.co serves it.
    const m = /^\/([^/]+\/[^/]+)\/resolve\/[^/]+\/(.+)$/.exec(path);
    const file = m && m[1] === modelId && !m[2]!.includes('..') ? join(modelPath(hubRoot, modelId), m[2]!) : null;
    if (!file || !existsSync(file)) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Entry not found');
      return;
    }
    if (file.endsWith('.onnx')) await weightsGate;
    const body = await readFile(file);
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(body.length) });
    if (req.method === 'HEAD') res.end();
    else res.end(body);
  });
  await new Promise<void>((resolve) => hub.listen(0, '127.0.0.1', resolve));
  hubUrl = `http://127.0.0.1:${(hub.address() as AddressInfo).port}/`;
});

afterAll(async () => {
  releaseWeights();
  await new Promise((resolve) => hub.close(resolve));
  await rm(hubRoot, { recursive: true, force: true });
});

const skycast = { id: 'skycast', name: 'skycast', description: 'Weather forecast for the city' };
const lingua = { id: 'lingua', name: 'lingua', description: 'translation of text' };

describe('the model fetched in the background on first start', () => {
  it('answers keyword-only while the model downloads, then the same index answers hybrid and finds a service from another language', async () => {
    const modelDir = await mkdtemp(join(tmpdir(), 'farebox-models-'));
    weightsGate = new Promise((resolve) => {
      releaseWeights = resolve;
    });
    const progress: ModelDownloadProgress[] = [];
    const embedder = createEmbedder({ modelDir, modelId, dtype: 'fp32', allowRemote: true, hubUrl, onProgress: (p) => progress.push(p) });
    const index = createSearchIndex({ embedder, cosineFloor: 0.5 });
    // Indexed while the model is missing: keyword-searchable at once, and registration does not wait for the download.
    await index.upsert(skycast);
    await index.upsert(lingua);
    await index.idle();

    expect(index.status()).toMatchObject({ mode: 'keyword-only', reason: expect.stringMatching(/^embedding model is downloading/), vectors: 0 });
    expect(await index.searchWithMode('weather')).toMatchObject({ mode: 'keyword', hits: [{ id: 'skycast' }] });
    // Spanish for "weather forecast": no shared word, so keyword search finds nothing (yet).
    expect(await index.searchWithMode('pronóstico del tiempo')).toEqual({ mode: 'keyword', hits: [] });

    releaseWeights();
    expect(await embedder.load()).toMatchObject({ state: 'ready' });
    await index.idle();

    expect(index.status()).toMatchObject({ mode: 'hybrid', model: modelId, documents: 2, vectors: 2, pendingEmbeddings: 0 });
    expect(index.status().download).toBeUndefined();
    const found = await index.searchWithMode('pronóstico del tiempo');
    expect(found.mode).toBe('hybrid');
    expect(found.hits.map((h) => h.id)).toEqual(['skycast']);
    expect((await index.searchWithMode('traduccion')).hits.map((h) => h.id)).toEqual(['lingua']);

    // Fetched from the stand-in hub, with progress, into the model directory: the next start loads it offline.
    expect(requests).toContain(`GET /${modelId}/resolve/main/onnx/model.onnx`);
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.at(-1)!.loaded).toBe(progress.at(-1)!.total);
    expect(existsSync(join(modelPath(modelDir, modelId), 'onnx', 'model.onnx'))).toBe(true);
    const offline = createEmbedder({ modelDir, modelId, dtype: 'fp32', allowRemote: false });
    expect(await offline.load()).toMatchObject({ state: 'ready' });
    await rm(modelDir, { recursive: true, force: true });
  });

  it('stays keyword-only and says why and how to get the model when the hub cannot be reached', async () => {
    const modelDir = await mkdtemp(join(tmpdir(), 'farebox-models-'));
    // A port nothing listens on: the network does not allow the download.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/`;
    await new Promise((resolve) => closed.close(resolve));
    const embedder = createEmbedder({ modelDir, modelId, dtype: 'fp32', allowRemote: true, hubUrl: deadUrl });
    const index = createSearchIndex({ embedder });
    await index.upsert(skycast);
    const status = await embedder.load();
    expect(status.state).toBe('failed');
    expect(status.reason).toContain(`embedding model unavailable: model ${modelId} is not in ${modelDir} and downloading it from ${deadUrl} failed`);
    expect(index.status()).toMatchObject({ mode: 'keyword-only', vectors: 0 });
    expect(await index.searchWithMode('weather')).toMatchObject({ mode: 'keyword', hits: [{ id: 'skycast' }] });
    await rm(modelDir, { recursive: true, force: true });
  });

  it('refuses a hub address that is not an http(s) URL', () => {
    expect(() => createEmbedder({ hubUrl: 'ftp://mirror' })).toThrow('hubUrl must be an http(s) URL, got "ftp://mirror"');
  });
});
