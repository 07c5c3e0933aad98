import { LockTimeoutError, withFileLock as withLockFile } from '@farebox/protocol/files';
import { OAuthClientError } from './errors.js';

export interface LockOptions {
  /** Give up waiting after this long (default 15 minutes: a sign-in in the browser can take a while). */
  timeoutMs?: number;
  /** A lock older than this is taken over even if its process seems alive (default 20 minutes). */
  staleMs?: number;
  /** Poll interval while waiting (default 100 ms). */
  pollMs?: number;
}

/**
 * Runs `fn` while holding an exclusive lock file (`@farebox/protocol/files`),
 * so that two processes started at once do not both sign in or both spend the
 * same refresh token. A lock left by a dead process is taken over.
 */
export async function withFileLock<T>(path: string, fn: () => Promise<T>, options: LockOptions = {}): Promise<T> {
  let running = false;
  try {
    return await withLockFile(
      path,
      () => {
        running = true;
        return fn();
      },
      {
        timeoutMs: options.timeoutMs ?? 15 * 60_000,
        staleMs: options.staleMs ?? 20 * 60_000,
        ...(options.pollMs !== undefined ? { pollMs: options.pollMs } : {}),
      },
    );
  } catch (e) {
    if (running) throw e;
    if (e instanceof LockTimeoutError)
      throw new OAuthClientError('LOCK_TIMEOUT', `another Farebox program (MCP adapter or CLI) has held ${path} for too long; delete it if none is running`);
    throw new OAuthClientError('TOKEN_FILE', `cannot create the lock file ${path}: ${(e as Error).message}`);
  }
}
