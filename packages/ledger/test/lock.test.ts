import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { LEDGER_MIGRATIONS_DIR, LOCK_FILE_NAME, LedgerError, openLedger, readMigrations, SIGNUP_CREDIT } from '@farebox/ledger';

const here = dirname(fileURLToPath(import.meta.url));
const dirs: string[] = [];

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'farebox-lock-'));
  dirs.push(dir);
  return dir;
}

afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** Runs test/fixtures/child.ts in a real second Node process and returns its JSON lines. */
function child(mode: string, dataDir: string): Promise<{ lines: Record<string, unknown>[]; signal: NodeJS.Signals | null; code: number | null }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--conditions=@farebox/source', '--import', 'tsx', join(here, 'fixtures', 'child.ts'), mode, dataDir], {
      cwd: join(here, '..'),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
    proc.on('error', reject);
    proc.on('close', (code, signal) => {
      const lines = out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      if (lines.length === 0) reject(new Error(`child printed nothing (code ${code}, signal ${signal}): ${err}`));
      else resolve({ lines, signal, code });
    });
  });
}

describe('PGlite lock file', () => {
  it('refuses a second process on the same data directory, naming the holder pid', async () => {
    const dataDir = await tempDir();
    const ledger = await openLedger({ dataDir, env: {} });
    try {
      const { lines } = await child('try-open', dataDir);
      expect(lines[0]).toMatchObject({ ok: false, code: 'LOCKED', data: { pid: process.pid } });
      expect(String(lines[0]?.message)).toContain(`in use by process ${process.pid}`);
      // A second open in this same process is refused as well.
      const again = await openLedger({ dataDir, env: {} }).catch((e: unknown) => e);
      expect(again).toBeInstanceOf(LedgerError);
      expect(again).toMatchObject({ code: 'LOCKED' });
      // The holder is unaffected.
      await ledger.openAccount('still-works');
      expect((await ledger.balance('still-works')).balance).toBe(SIGNUP_CREDIT);
    } finally {
      await ledger.close();
    }
    expect(existsSync(join(dataDir, LOCK_FILE_NAME))).toBe(false);
    // Once closed, another process may open it.
    expect((await child('try-open', dataDir)).lines[0]).toEqual({ ok: true });
  });

  it('takes over the lock of a process killed between hold and post, and the reaper makes the balance whole', async () => {
    const dataDir = await tempDir();
    const { lines, signal } = await child('hold-and-die', dataDir);
    expect(signal).toBe('SIGKILL');
    const { holdId, pid } = lines[0] as { holdId: string; pid: number };
    // The dead process's lock is still on disk.
    expect(JSON.parse(readFileSync(join(dataDir, LOCK_FILE_NAME), 'utf8'))).toMatchObject({ pid });
    const ledger = await openLedger({ dataDir, env: {} });
    try {
      expect(JSON.parse(readFileSync(join(dataDir, LOCK_FILE_NAME), 'utf8'))).toMatchObject({ pid: process.pid });
      expect(await ledger.balance('crash-victim')).toMatchObject({ balance: SIGNUP_CREDIT - 10_000_000n, held: 10_000_000n });
      const { voided } = await ledger.reapExpiredHolds();
      expect(voided).toEqual([holdId]);
      expect(await ledger.balance('crash-victim')).toMatchObject({ balance: SIGNUP_CREDIT, held: 0n });
      expect((await ledger.getHold(holdId)).state).toBe('voided');
      expect((await ledger.verify()).mismatches).toEqual([]);
      const { rows } = await ledger.db.query(`SELECT count(*) AS n FROM farebox_migrations WHERE namespace = 'ledger'`);
      expect(rows[0]?.n).toBe(String((await readMigrations(LEDGER_MIGRATIONS_DIR)).length));
    } finally {
      await ledger.close();
    }
  });
});
