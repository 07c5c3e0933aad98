import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, expect, it } from 'vitest';
import { ensureBuilt } from '@farebox/test-kit';

// The adapter against a running gateway is tested end to end in e2e/mcp-adapter.test.ts.
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const ADAPTER_BIN = join(root, 'dist', 'main.js');

beforeAll(() => ensureBuilt(root, ADAPTER_BIN), 120_000);

it('refuses to start with an invalid FAREBOX_URL and says why on stderr', () => {
  const r = spawnSync(process.execPath, [ADAPTER_BIN], { env: { PATH: process.env.PATH, FAREBOX_URL: 'ftp://example.com' }, input: '', encoding: 'utf8' });
  expect(r.status).toBe(1);
  expect(r.stderr).toContain('FAREBOX_URL must be an http(s) URL');
});
