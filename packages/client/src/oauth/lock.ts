import { hostname } from 'node:os';
import { mkdir, open, readFile, stat, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { unlinkSync } from 'node:fs';
import { OAuthClientError } from './errors.js';

export interface LockOptions {
  /** Give up waiting after this long (default 15 minutes: a sign-in in the browser can take a while). */
  timeoutMs?: number;
  /** A lock older than this is taken over even if its process seems alive (default 20 minutes). */
  staleMs?: number;
  /** Poll interval while waiting (default 100 ms). */
  pollMs?: number;
}

const held = new Set<string>();
let exitHook = false;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function isStale(path: string, staleMs: number): Promise<boolean> {
  try {
    const [text, info] = await Promise.all([readFile(path, 'utf8'), stat(path)]);
    if (Date.now() - info.mtimeMs > staleMs) return true;
    const owner = JSON.parse(text) as { pid?: unknown; host?: unknown };
    // A lock of a process on this machine that is gone (crashed, killed) is stale.
    return typeof owner.pid === 'number' && owner.host === hostname() && !alive(owner.pid);
  } catch (e) {
    // Vanished meanwhile: not stale, just retry. Half-written (created, not yet filled): give the owner a moment.
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    try {
      return Date.now() - (await stat(path)).mtimeMs > 5_000;
    } catch {
      return false;
    }
  }
}

/**
 * Runs `fn` while holding an exclusive lock file (`O_EXCL` create), so that two
 * processes started at once do not both sign in or both spend the same refresh
 * token. A lock left by a dead process is taken over.
 */
export async function withFileLock<T>(path: string, fn: () => Promise<T>, options: LockOptions = {}): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 15 * 60_000;
  const staleMs = options.staleMs ?? 20 * 60_000;
  const pollMs = options.pollMs ?? 100;
  const deadline = Date.now() + timeoutMs;
  await mkdir(dirname(path), { recursive: true, mode: 0o700 }).catch(() => undefined);
  for (;;) {
    try {
      const fh = await open(path, 'wx', 0o600);
      try {
        await fh.writeFile(JSON.stringify({ pid: process.pid, host: hostname(), at: new Date().toISOString() }));
      } finally {
        await fh.close();
      }
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw new OAuthClientError('TOKEN_FILE', `cannot create the lock file ${path}: ${(e as Error).message}`);
    }
    if (await isStale(path, staleMs)) {
      await unlink(path).catch(() => undefined);
      continue;
    }
    if (Date.now() > deadline) throw new OAuthClientError('LOCK_TIMEOUT', `another Farebox program (MCP adapter or CLI) has held ${path} for too long; delete it if none is running`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
  held.add(path);
  if (!exitHook) {
    exitHook = true;
    // Killed while holding the lock: leave no lock behind.
    process.once('exit', () => {
      for (const p of held) {
        try {
          unlinkSync(p);
        } catch {
          // already gone
        }
      }
    });
  }
  try {
    return await fn();
  } finally {
    held.delete(path);
    await unlink(path).catch(() => undefined);
  }
}
