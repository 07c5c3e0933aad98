import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireLockFileSync, LockHeldError, LockTimeoutError, withFileLock, writeFileAtomic, writeFileAtomicSync } from '@farebox/protocol/files';

const dir = () => mkdtemp(join(tmpdir(), 'farebox-files-'));

/** A process that has exited: its pid is free (or reused, which the tests avoid by checking it is gone). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0']);
  await new Promise((r) => child.once('exit', r));
  return child.pid!;
}

describe('writeFileAtomic', () => {
  it('replaces the file whole, 0600, in a new 0700 folder, and leaves no temporary file', async () => {
    const d = await dir();
    const path = join(d, 'sub', 'state.json');
    await writeFileAtomic(path, 'first');
    await writeFileAtomic(path, 'second');
    writeFileAtomicSync(join(d, 'sub', 'sync.json'), 'third');
    expect(readFileSync(path, 'utf8')).toBe('second');
    expect(readFileSync(join(d, 'sub', 'sync.json'), 'utf8')).toBe('third');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(d, 'sub')).mode & 0o777).toBe(0o700);
    expect(readdirSync(join(d, 'sub')).sort()).toEqual(['state.json', 'sync.json']);
  });

  it('keeps the old content when the write fails, and cleans up', async () => {
    const d = await dir();
    const path = join(d, 'state.json');
    await writeFileAtomic(path, 'old');
    // A directory where the file should go: the rename fails.
    await expect(writeFileAtomic(d, 'new')).rejects.toThrow();
    expect(readFileSync(path, 'utf8')).toBe('old');
    expect(readdirSync(d).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('lets concurrent writers each land whole (the last one wins, never a mix)', async () => {
    const d = await dir();
    const path = join(d, 'state.json');
    const texts = Array.from({ length: 20 }, (_, i) => String(i).repeat(10_000));
    await Promise.all(texts.map((t) => writeFileAtomic(path, t)));
    expect(texts).toContain(readFileSync(path, 'utf8'));
  });
});

describe('lock files', () => {
  it('refuses a second holder while the first lives, names it, and frees the file on release', async () => {
    const path = join(await dir(), 'a.lock');
    const lock = acquireLockFileSync(path);
    let refused: unknown;
    try {
      acquireLockFileSync(path);
    } catch (e) {
      refused = e;
    }
    expect(refused).toBeInstanceOf(LockHeldError);
    expect((refused as LockHeldError).holder).toMatchObject({ pid: process.pid, host: hostname() });
    lock.release();
    expect(existsSync(path)).toBe(false);
    acquireLockFileSync(path).release();
  });

  it('takes over a lock left by a dead process on this host, not one of another host', async () => {
    const d = await dir();
    const stale = join(d, 'stale.lock');
    writeFileSync(stale, JSON.stringify({ pid: await deadPid(), host: hostname(), startedAt: new Date().toISOString() }));
    const lock = acquireLockFileSync(stale);
    expect(JSON.parse(readFileSync(stale, 'utf8')).pid).toBe(process.pid);
    lock.release();
    const foreign = join(d, 'foreign.lock');
    writeFileSync(foreign, JSON.stringify({ pid: 1, host: 'another-host.example', startedAt: new Date().toISOString() }));
    expect(() => acquireLockFileSync(foreign)).toThrow(LockHeldError);
    // A release never removes a lock that is not its holder's.
    expect(existsSync(foreign)).toBe(true);
  });

  it('withFileLock runs callers one at a time, waits for the holder, and times out', async () => {
    const path = join(await dir(), 'b.lock');
    const order: string[] = [];
    let inside = 0;
    const run = (name: string) =>
      withFileLock(
        path,
        async () => {
          order.push(`${name}:in`);
          inside += 1;
          expect(inside).toBe(1);
          // Work that takes a few turns of the event loop (file I/O), while the others poll for the lock.
          await writeFile(join(dirname(path), 'work'), name);
          expect(await readFile(join(dirname(path), 'work'), 'utf8')).toBe(name);
          inside -= 1;
          order.push(`${name}:out`);
        },
        { pollMs: 5 },
      );
    await Promise.all([run('a'), run('b'), run('c')]);
    expect(order).toHaveLength(6);
    for (let i = 0; i < order.length; i += 2) expect(order[i + 1]).toBe(order[i]!.replace(':in', ':out'));
    const held = acquireLockFileSync(path);
    await expect(withFileLock(path, async () => 'never', { timeoutMs: 50, pollMs: 5 })).rejects.toBeInstanceOf(LockTimeoutError);
    held.release();
    await expect(withFileLock(path, async () => 'ran', { pollMs: 5 })).resolves.toBe('ran');
    expect(existsSync(path)).toBe(false);
  });
});
