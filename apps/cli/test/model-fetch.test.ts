import { createServer, type Server } from 'node:http';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeTinyModel } from '@farebox/test-kit/tiny-model';
import { cli } from './run.js';

// Issue 35, item 2: `farebox model fetch` downloads the search model (here the
// test kit's tiny model under the default id, from a loopback server in the
// Hugging Face layout standing in for the hub), with progress lines.

const MODEL_ID = 'Xenova/multilingual-e5-small';

describe('farebox model fetch', () => {
  let tmp: string;
  let hubRoot: string;
  let hub: Server;
  let hubUrl: string;

  beforeAll(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'farebox-cli-model-'));
    hubRoot = await mkdtemp(join(tmpdir(), 'farebox-hub-'));
    await writeTinyModel(hubRoot, MODEL_ID, 'model_quantized.onnx');
    hub = createServer(async (req, res) => {
      const m = /^\/(.+?\/.+?)\/resolve\/main\/(.+)$/.exec(decodeURIComponent(new URL(req.url ?? '/', 'http://hub').pathname));
      const file = m && m[1] === MODEL_ID && !m[2]!.includes('..') ? join(hubRoot, ...MODEL_ID.split('/'), m[2]!) : null;
      if (!file || !existsSync(file)) return void res.writeHead(404).end('Entry not found');
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(body.length) }).end(body);
    });
    await new Promise<void>((resolve) => hub.listen(0, '127.0.0.1', resolve));
    hubUrl = `http://127.0.0.1:${(hub.address() as AddressInfo).port}/`;
  });
  afterAll(async () => {
    await new Promise((resolve) => hub?.close(resolve));
    await rm(tmp, { recursive: true, force: true });
    await rm(hubRoot, { recursive: true, force: true });
  });

  const env = () => ({ PATH: process.env.PATH ?? '', HOME: tmp, FAREBOX_CONFIG_DIR: join(tmp, 'farebox'), BROWSER: 'none' });

  it('downloads the model into --dir from --hub, says where it is, and prints progress', async () => {
    const dir = join(tmp, 'models');
    const r = await cli(['model', 'fetch', '--dir', dir, '--hub', hubUrl], { env: env() });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`Model ${MODEL_ID} (384 dimensions) is in ${join(dir, 'Xenova', 'multilingual-e5-small')}.`);
    expect(r.stderr).toMatch(new RegExp(`downloading ${MODEL_ID}: 100% \\(`));
    expect(existsSync(join(dir, 'Xenova', 'multilingual-e5-small', 'onnx', 'model_quantized.onnx'))).toBe(true);
  });

  it('takes the hub from FAREBOX_MODEL_HUB_URL, and fails with the reason (exit 1) when the hub has no such model', async () => {
    const dir = join(tmp, 'models-env');
    const ok = await cli(['model', 'fetch', '--dir', dir, '--json'], { env: { ...env(), FAREBOX_MODEL_HUB_URL: hubUrl } });
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ modelId: MODEL_ID, dims: 384 });

    const bad = await cli(['model', 'fetch', '--dir', join(tmp, 'models-bad'), '--hub', `${hubUrl}missing/`], { env: env() });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(
      `farebox: embedding model unavailable: model ${MODEL_ID} is not in ${join(tmp, 'models-bad')} and downloading it from ${hubUrl}missing/ failed`,
    );
  });
});
