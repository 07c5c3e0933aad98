// Fresh in-memory databases start from a dump of a fresh PGlite cluster
// (src/pglite-template.ts): the same empty cluster initdb writes, never a
// table of another database, and a dump on disk only where this user alone
// can write it.
import { lstat, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';

const uid = process.getuid?.() ?? 0;
const dir = join(tmpdir(), `farebox-pglite-${uid}`);

/** The ledger as a new process loads it (its template not yet read). */
async function freshModule() {
  vi.resetModules();
  return import('@farebox/ledger');
}

describe('memory:// databases from the cluster dump', () => {
  it('are each a database of their own: what one writes, the next never sees', async () => {
    const { openDatabase } = await freshModule();
    const a = await openDatabase({ dataDir: 'memory://' });
    await a.query('CREATE TABLE mine (v int)');
    await a.query('INSERT INTO mine VALUES (42)');
    const b = await openDatabase({ dataDir: 'memory://' });
    const tables = await b.query<{ n: string }>("SELECT count(*)::text AS n FROM pg_tables WHERE schemaname = 'public'");
    expect(tables.rows[0]!.n).toBe('0');
    await expect(b.query('SELECT * FROM mine')).rejects.toThrow(/mine/);
    expect((await a.query<{ v: number }>('SELECT v FROM mine')).rows).toEqual([{ v: 42 }]);
    await Promise.all([a.close(), b.close()]);
  });

  it('keeps its dump in a directory only this user can read, named after the PGlite version', async () => {
    const { openDatabase } = await freshModule();
    const db = await openDatabase({ dataDir: 'memory://' });
    await db.close();
    const info = await lstat(dir);
    expect(info.uid).toBe(uid);
    expect(info.mode & 0o777).toBe(0o700);
    const files = (await readdir(dir)).filter((f) => /^cluster-\d+\.\d+\.\d+\.tar$/.test(f));
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) expect((await lstat(join(dir, f))).mode & 0o777).toBe(0o600);
  });

  it('opens a working database when the dump on disk is damaged (initdb as without one)', async () => {
    const { openDatabase } = await freshModule();
    const warm = await openDatabase({ dataDir: 'memory://' });
    await warm.close();
    const [file] = (await readdir(dir)).filter((f) => /^cluster-.*\.tar$/.test(f));
    const path = join(dir, file!);
    const { readFile } = await import('node:fs/promises');
    const good = await readFile(path);
    try {
      await writeFile(path, 'not a tar file');
      const fresh = await freshModule();
      const db = await fresh.openDatabase({ dataDir: 'memory://' });
      expect((await db.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      await db.close();
    } finally {
      await writeFile(path, good, { mode: 0o600 });
    }
  });
});

describe('a new data directory', () => {
  it('starts from the same dump, keeps what it writes across a restart, and is opened as it is the second time', async () => {
    const { mkdtemp, readdir: list } = await import('node:fs/promises');
    const { openDatabase } = await freshModule();
    const dataDir = join(await mkdtemp(join(tmpdir(), 'farebox-ledger-new-')), 'db');
    const first = await openDatabase({ dataDir });
    await first.query('CREATE TABLE kept (v int)');
    await first.query('INSERT INTO kept VALUES (7)');
    await first.close();
    expect(await list(dataDir)).toContain('PG_VERSION');
    const again = await openDatabase({ dataDir });
    expect((await again.query<{ v: number }>('SELECT v FROM kept')).rows).toEqual([{ v: 7 }]);
    await again.close();
  });
});
