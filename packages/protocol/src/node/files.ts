// Files written by Farebox processes (Node.js only; `@farebox/protocol/files`):
// atomic replacement of a file, and lock files that guard a resource against
// a second process. The one implementation every package uses.
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { chmod, mkdir, open, rename, unlink } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { FareboxError } from '../errors.js';

export interface AtomicWriteOptions {
  /** Mode of the file (default 0600: only this user reads what Farebox writes). */
  mode?: number;
  /** Mode of a missing parent directory, created on the way (default 0700). */
  dirMode?: number;
  /** fsync the file before the rename and the directory after it (default true). */
  durable?: boolean;
}

const tmpName = (path: string) => `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;

/**
 * Replaces `path` with `data` atomically: a reader sees the old file or the
 * new one, never a part; a crash leaves the old one. Written to a fresh
 * temporary file beside it (created exclusively), flushed, then renamed over.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  const mode = options.mode ?? 0o600;
  const dir = dirname(path);
  await mkdir(dir, { recursive: true, mode: options.dirMode ?? 0o700 });
  const tmp = tmpName(path);
  const fh = await open(tmp, 'wx', mode);
  try {
    try {
      await fh.writeFile(data);
      if (options.durable !== false) await fh.sync();
    } finally {
      await fh.close();
    }
    // The umask may narrow the mode, never widen it; set it exactly (a rename does not keep the old file's).
    await chmod(tmp, mode);
    await rename(tmp, path);
  } catch (e) {
    await unlink(tmp).catch(() => undefined);
    throw e;
  }
  if (options.durable !== false) {
    // Directory fsync makes the rename itself durable (not supported everywhere: best effort).
    const handle = await open(dir, 'r').catch(() => undefined);
    if (handle) {
      await handle.sync().catch(() => undefined);
      await handle.close();
    }
  }
}

/** {@link writeFileAtomic}, synchronously (for state saved from timers and exit hooks). */
export function writeFileAtomicSync(path: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): void {
  const mode = options.mode ?? 0o600;
  mkdirSync(dirname(path), { recursive: true, mode: options.dirMode ?? 0o700 });
  const tmp = tmpName(path);
  const fd = openSync(tmp, 'wx', mode);
  try {
    try {
      writeSync(fd, typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
      if (options.durable !== false) fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

/** Who holds a lock file: written into it by the holder. */
export interface LockHolder {
  pid: number;
  host: string;
  startedAt: string;
}

export interface LockFileOptions {
  /**
   * A lock older than this is taken over even when its holder seems alive
   * (default: never; only a lock of a dead process on this host is taken over).
   */
  staleMs?: number;
}

/** A lock file another live process holds. */
export class LockHeldError extends FareboxError<'LOCK_HELD', { path: string; holder: LockHolder }> {
  override readonly name: string = 'LockHeldError';
  constructor(
    readonly path: string,
    readonly holder: LockHolder,
  ) {
    super('LOCK_HELD', `${path} is held by process ${holder.pid} on ${holder.host}`, { path, holder });
  }
}

/** Waiting for a lock file took longer than allowed. */
export class LockTimeoutError extends FareboxError<'LOCK_TIMEOUT', { path: string }> {
  override readonly name: string = 'LockTimeoutError';
  constructor(readonly path: string) {
    super('LOCK_TIMEOUT', `timed out waiting for the lock file ${path}`, { path });
  }
}

export interface HeldLock {
  readonly path: string;
  /** Removes the lock file if it is still this holder's (idempotent). */
  release(): void;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: the process exists but belongs to someone else.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readHolder(path: string): LockHolder | undefined {
  try {
    const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'));
    if (typeof parsed !== 'object' || parsed === null) return undefined;
    const { pid, host, startedAt, at } = parsed as Record<string, unknown>;
    if (typeof pid !== 'number' || !Number.isInteger(pid) || typeof host !== 'string') return undefined;
    const since = typeof startedAt === 'string' ? startedAt : typeof at === 'string' ? at : '';
    return { pid, host, startedAt: since };
  } catch {
    return undefined;
  }
}

function modifiedAt(path: string): number | undefined {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

const held = new Set<HeldLock>();
let exitHook = false;

/** Creates the lock file exclusively; the lock, or undefined when it exists. */
function create(path: string): HeldLock | undefined {
  const mine: LockHolder = { pid: process.pid, host: hostname(), startedAt: new Date().toISOString() };
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
    throw e;
  }
  try {
    writeSync(fd, JSON.stringify(mine));
  } finally {
    closeSync(fd);
  }
  let released = false;
  const lock: HeldLock = {
    path,
    release() {
      if (released) return;
      released = true;
      held.delete(lock);
      const holder = readHolder(path);
      if (holder && holder.pid === mine.pid && holder.host === mine.host && holder.startedAt === mine.startedAt) {
        try {
          unlinkSync(path);
        } catch {
          // already gone
        }
      }
    },
  };
  held.add(lock);
  if (!exitHook) {
    exitHook = true;
    // Exiting while holding a lock (a signal, process.exit): leave none behind.
    process.once('exit', () => {
      for (const l of [...held]) l.release();
    });
  }
  return lock;
}

type Verdict = { kind: 'stale' } | { kind: 'held'; holder: LockHolder } | { kind: 'settling' };

/** Whether an existing lock file may be taken over. */
function judge(path: string, staleMs: number): Verdict {
  const holder = readHolder(path);
  const mtime = modifiedAt(path);
  if (mtime === undefined) return { kind: 'settling' }; // vanished meanwhile: try again
  if (Date.now() - mtime > staleMs) return { kind: 'stale' };
  if (!holder) {
    // Created and not written yet by its holder, or garbage from a crash mid-write.
    return Date.now() - mtime < 2_000 ? { kind: 'settling' } : { kind: 'stale' };
  }
  if (holder.host !== hostname() || alive(holder.pid)) return { kind: 'held', holder };
  return { kind: 'stale' };
}

/** Moves a stale lock aside atomically (only one taker can rename it) and deletes it. */
function takeOver(path: string): void {
  const aside = `${path}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    renameSync(path, aside);
    rmSync(aside, { force: true });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
}

/**
 * Takes a lock file now or throws {@link LockHeldError} naming its live
 * holder. A lock left by a dead process on this host is taken over.
 */
export function acquireLockFileSync(path: string, options: LockFileOptions = {}): HeldLock {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const staleMs = options.staleMs ?? Number.POSITIVE_INFINITY;
  for (let attempt = 0; attempt < 10; attempt++) {
    const lock = create(path);
    if (lock) return lock;
    const verdict = judge(path, staleMs);
    if (verdict.kind === 'held') throw new LockHeldError(path, verdict.holder);
    if (verdict.kind === 'stale' || attempt >= 4) takeOver(path);
    else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
  }
  throw new LockTimeoutError(path);
}

export interface WaitForLockOptions extends LockFileOptions {
  /** Give up waiting after this long (default 15 minutes); then {@link LockTimeoutError}. */
  timeoutMs?: number;
  /** Poll interval while waiting (default 100 ms). */
  pollMs?: number;
}

/**
 * Runs `fn` while holding the lock file, waiting while another live process
 * holds it. A lock left by a dead process on this host is taken over.
 */
export async function withFileLock<T>(path: string, fn: () => Promise<T>, options: WaitForLockOptions = {}): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 15 * 60_000;
  const staleMs = options.staleMs ?? Number.POSITIVE_INFINITY;
  const pollMs = options.pollMs ?? 100;
  const deadline = Date.now() + timeoutMs;
  await mkdir(dirname(path), { recursive: true, mode: 0o700 }).catch(() => undefined);
  let lock: HeldLock | undefined;
  for (;;) {
    lock = create(path);
    if (lock) break;
    if (judge(path, staleMs).kind === 'stale') {
      takeOver(path);
      continue;
    }
    if (Date.now() > deadline) throw new LockTimeoutError(path);
    await new Promise((r) => setTimeout(r, pollMs));
  }
  try {
    return await fn();
  } finally {
    lock.release();
  }
}
