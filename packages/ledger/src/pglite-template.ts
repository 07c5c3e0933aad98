import { PGlite } from '@electric-sql/pglite';
import { randomBytes } from 'node:crypto';
import { openAsBlob, readFileSync } from 'node:fs';
import { lstat, mkdir, rename, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * A fresh PGlite cluster (what initdb leaves) for new databases: `memory://`
 * ones and a data directory that holds none yet. initdb is most of what
 * opening a new PGlite costs: 2-9 s on these machines in memory, 3 s on disk,
 * against about a second to load the same cluster from a dump. So the first
 * new database of a process dumps a fresh cluster and every later one loads
 * that dump; the dump is also kept on disk for the
 * user's next processes (tests open hundreds of throwaway databases), in a
 * directory of their own (0700, owned by them, under the system's temporary
 * directory), named after the PGlite version that wrote it. The dump holds
 * no data: only what initdb writes. Anything unexpected (no temporary
 * directory, another owner, a bad file) falls back to PGlite's own initdb.
 */
let template: Promise<Blob | undefined> | undefined;

/** The installed PGlite's version (its package.json, beside the `dist/` its entry point is in). */
const VERSION = (() => {
  try {
    const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
    const manifest = JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8')) as { name?: string; version?: string };
    return manifest.name === '@electric-sql/pglite' && manifest.version ? manifest.version : undefined;
  } catch {
    return undefined;
  }
})();

/** Opens a new PGlite database (in memory, or in a directory without one), from the cluster template when there is one. */
export async function createFreshPglite(dataDir: string): Promise<PGlite> {
  template ??= loadTemplate().catch(() => undefined);
  const blob = await template;
  if (blob) {
    try {
      return await PGlite.create({ dataDir, loadDataDir: blob });
    } catch {
      // a dump this PGlite cannot read: initdb as usual
    }
  }
  return PGlite.create(dataDir);
}

async function loadTemplate(): Promise<Blob | undefined> {
  const uid = process.getuid?.();
  // Without a user id or a version to name the file, the dump stays in this process.
  if (uid === undefined || VERSION === undefined) return freshDump();
  const dir = join(tmpdir(), `farebox-pglite-${uid}`);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const info = await lstat(dir);
  // Someone else's directory (a shared /tmp) is never read.
  if (!info.isDirectory() || info.uid !== uid || (info.mode & 0o077) !== 0) return freshDump();
  const file = join(dir, `cluster-${VERSION}.tar`);
  try {
    const f = await lstat(file);
    if (f.isFile() && f.uid === uid && f.size > 0) return await openAsBlob(file);
  } catch {
    // not written yet
  }
  const dump = await freshDump();
  const partial = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await writeFile(partial, Buffer.from(await dump.arrayBuffer()), { mode: 0o600 });
  await rename(partial, file);
  return dump;
}

async function freshDump(): Promise<Blob> {
  const lite = await PGlite.create('memory://');
  try {
    return await lite.dumpDataDir('none');
  } finally {
    await lite.close();
  }
}
