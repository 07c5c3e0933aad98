import { mkdirSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { acquireLockFileSync, LockHeldError } from '@farebox/protocol/files';
import { LedgerError } from './errors.js';

/** File that guards a PGlite data directory against a second process. */
export const LOCK_FILE_NAME = 'farebox.lock';

export interface DirectoryLock {
  readonly path: string;
  release(): void;
}

/**
 * Takes the lock file of a PGlite data directory. PGlite takes no lock of its
 * own: two processes on one directory would silently diverge. A lock left by a
 * dead process on this host is taken over; a live holder gives `LOCKED`.
 */
export function acquireDirectoryLock(dataDir: string): DirectoryLock {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, LOCK_FILE_NAME);
  try {
    return acquireLockFileSync(path);
  } catch (error) {
    if (error instanceof LockHeldError) {
      const holder = error.holder;
      if (holder.pid === process.pid && holder.host === hostname()) {
        throw new LedgerError('LOCKED', `data directory ${dataDir} is already open in this process (pid ${holder.pid})`, { dataDir, pid: holder.pid });
      }
      throw new LedgerError(
        'LOCKED',
        `data directory ${dataDir} is in use by process ${holder.pid} on ${holder.host} (lock file ${path}); stop it or point this process at another directory or at DATABASE_URL`,
        { dataDir, pid: holder.pid, host: holder.host, lockFile: path },
      );
    }
    if ((error as Error).name === 'LockTimeoutError') throw new LedgerError('LOCKED', `could not take the lock file ${path}`, { dataDir, lockFile: path });
    throw error;
  }
}
