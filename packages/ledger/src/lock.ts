import { closeSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { LedgerError } from './errors.js';

/** File that guards a PGlite data directory against a second process. */
export const LOCK_FILE_NAME = 'farebox.lock';

interface LockContent {
  pid: number;
  host: string;
  startedAt: string;
}

export interface DirectoryLock {
  readonly path: string;
  release(): void;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readLock(path: string): LockContent | undefined {
  try {
    const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'));
    if (typeof parsed === 'object' && parsed !== null) {
      const { pid, host, startedAt } = parsed as Record<string, unknown>;
      if (typeof pid === 'number' && Number.isInteger(pid) && typeof host === 'string') {
        return { pid, host, startedAt: typeof startedAt === 'string' ? startedAt : '' };
      }
    }
    return undefined;
  } catch {
    return undefined;
  }
}

/**
 * Takes the lock file of a PGlite data directory. PGlite takes no lock of its
 * own: two processes on one directory would silently diverge. A lock left by a
 * dead process on this host is taken over; a live holder gives `LOCKED`.
 */
export function acquireDirectoryLock(dataDir: string): DirectoryLock {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, LOCK_FILE_NAME);
  const mine: LockContent = { pid: process.pid, host: hostname(), startedAt: new Date().toISOString() };
  for (let attempt = 0; attempt < 5; attempt++) {
    let fd: number;
    try {
      fd = openSync(path, 'wx', 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = readLock(path);
      if (holder && holder.pid === process.pid && holder.host === mine.host) {
        throw new LedgerError('LOCKED', `data directory ${dataDir} is already open in this process (pid ${holder.pid})`, { dataDir, pid: holder.pid });
      }
      if (holder && (holder.host !== mine.host || isAlive(holder.pid))) {
        throw new LedgerError(
          'LOCKED',
          `data directory ${dataDir} is in use by process ${holder.pid} on ${holder.host} (lock file ${path}); stop it or point this process at another directory or at DATABASE_URL`,
          { dataDir, pid: holder.pid, host: holder.host, lockFile: path },
        );
      }
      if (!holder) {
        // Being written by a process that has just created it, or garbage from a crash mid-write.
        if (Date.now() - modifiedAt(path) < 2_000 && attempt < 4) {
          sleepSync(50);
          continue;
        }
      }
      // Stale: move it aside atomically (only one taker can rename it) and retry.
      try {
        renameSync(path, `${path}.stale-${process.pid}`);
        rmSync(`${path}.stale-${process.pid}`, { force: true });
      } catch (renameError) {
        if ((renameError as NodeJS.ErrnoException).code !== 'ENOENT') throw renameError;
      }
      continue;
    }
    try {
      writeSync(fd, JSON.stringify(mine));
    } finally {
      closeSync(fd);
    }
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      process.off('exit', release);
      const holder = readLock(path);
      if (holder && holder.pid === mine.pid && holder.startedAt === mine.startedAt) rmSync(path, { force: true });
    };
    process.on('exit', release);
    return { path, release };
  }
  throw new LedgerError('LOCKED', `could not take the lock file ${path}`, { dataDir, lockFile: path });
}

function modifiedAt(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
