import { mkdtemp, readdir, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort, spawnGateway } from './process-kit.js';

async function walk(dir: string): Promise<Array<{ path: string; mode: number; dir: boolean }>> {
  const out: Array<{ path: string; mode: number; dir: boolean }> = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const s = await stat(path);
    out.push({ path, mode: s.mode & 0o777, dir: entry.isDirectory() });
    if (entry.isDirectory()) out.push(...(await walk(path)));
  }
  return out;
}

describe('farebox-gateway on mainnet settings', () => {
  it('refuses to start on an unsafe configuration and names every problem at once', async () => {
    const dataDir = join(await mkdtemp(join(tmpdir(), 'farebox-prod-')), 'data');
    const p = spawnGateway({
      PORT: String(await freePort()),
      FAREBOX_DATA_DIR: dataDir,
      FAREBOX_NETWORK: 'mainnet',
      FAREBOX_FREE_TOPUPS: 'true',
      FAREBOX_ALLOW_LOOPBACK_ENDPOINTS: 'true',
    });
    expect(await p.exited).toBe(1);
    const err = p.output();
    expect(err).toContain('refusing to start');
    expect(err).not.toContain('TRUSTLESS_WORK_URL');
    for (const needle of [
      'DATABASE_URL',
      'https FAREBOX_BASE_URL',
      'FAREBOX_FREE_TOPUPS=true is refused',
      'FAREBOX_ALLOW_LOOPBACK_ENDPOINTS=true is refused',
      'FAREBOX_SIGNUP_CREDIT',
      'FAREBOX_KEYSTORE_KEY',
    ]) {
      expect(err).toContain(needle);
    }
    // Nothing was created: no database, no keys.
    await expect(stat(dataDir)).rejects.toMatchObject({ code: 'ENOENT' });
  }, 60_000);
});

describe('the data directory', () => {
  it('holds only files readable by the gateway user (0600) in directories only it can enter (0700)', async () => {
    const dataDir = join(await mkdtemp(join(tmpdir(), 'farebox-perm-')), 'data');
    const p = spawnGateway({ PORT: String(await freePort()), FAREBOX_DATA_DIR: dataDir, FAREBOX_ALLOW_LOOPBACK_ENDPOINTS: 'true' });
    try {
      await p.started;
      const entries = [{ path: dataDir, mode: (await stat(dataDir)).mode & 0o777, dir: true }, ...(await walk(dataDir))];
      // The database, the keystore and the catalog cursor are all there.
      expect(entries.some((e) => e.path.endsWith('farebox.lock'))).toBe(true);
      expect(entries.some((e) => e.path.includes(`${join(dataDir, 'keystore')}`))).toBe(true);
      expect(entries.filter((e) => !e.dir).length).toBeGreaterThan(10);
      expect(entries.filter((e) => e.mode & 0o077).map((e) => `${e.path} ${e.mode.toString(8)}`)).toEqual([]);
    } finally {
      p.child.kill('SIGTERM');
      await p.exited;
    }
  }, 60_000);
});
