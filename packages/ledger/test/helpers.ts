import { randomBytes } from 'node:crypto';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LEDGER_MIGRATIONS_DIR, LEDGER_NAMESPACE, migrate, openDatabase, openLedger, readMigrations } from '@farebox/ledger';
import type { Database, Ledger, LedgerOptions } from '@farebox/ledger';
import { dropSchema } from '@farebox/test-kit/postgres';

export const onPostgres = process.env.LEDGER_TEST_BACKEND === 'postgres';
export const databaseUrl = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

export interface TestLedger {
  ledger: Ledger;
  backend: 'postgres' | 'pglite';
  /** Closes the ledger and removes its schema or data directory. */
  dispose(): Promise<void>;
}

/**
 * A fresh ledger: on PostgreSQL (project 'ledger:pg') in a schema of its own,
 * otherwise on PGlite in a temporary data directory.
 */
export async function openTestLedger(options: LedgerOptions = {}): Promise<TestLedger> {
  if (onPostgres) {
    const schema = `ledger_test_${process.pid}_${randomBytes(4).toString('hex')}`;
    const ledger = await openLedger({ url: databaseUrl, schema, poolSize: 20, ...options });
    return {
      ledger,
      backend: 'postgres',
      async dispose() {
        await ledger.close();
        await dropSchema(databaseUrl, schema);
      },
    };
  }
  // In memory: nothing a test reads depends on the files, and a file-backed PGlite spends most of a test's time writing them.
  const ledger = await openLedger({ dataDir: 'memory://', env: {}, ...options });
  return {
    ledger,
    backend: 'pglite',
    async dispose() {
      await ledger.close();
    },
  };
}

/**
 * A database of its own as an older ledger left it: the ledger's migrations up
 * to schema `version` only, for upgrade tests (`migrateLedger` brings it up to
 * date). `dispose` closes it and removes its schema or data.
 */
/** The file names of the ledger's migrations after `version`, in order: what an upgrade from that schema applies. */
export async function migrationsAfter(version: number): Promise<string[]> {
  return (await readMigrations(LEDGER_MIGRATIONS_DIR)).filter((m) => m.version > version).map((m) => m.name);
}

export async function openLedgerAt(version: number): Promise<{ db: Database; dispose(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), `farebox-ledger-v${version}-`));
  const schema = `ledger_v${version}_${process.pid}_${randomBytes(4).toString('hex')}`;
  const db = onPostgres ? await openDatabase({ url: databaseUrl, schema }) : await openDatabase({ dataDir: 'memory://', env: {} });
  const dispose = async () => {
    await db.close();
    if (onPostgres) await dropSchema(databaseUrl, schema);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const files = (await readMigrations(LEDGER_MIGRATIONS_DIR)).filter((m) => m.version <= version);
    for (const f of files) await copyFile(join(LEDGER_MIGRATIONS_DIR, f.name), join(dir, f.name));
    const { applied } = await migrate(db, dir, LEDGER_NAMESPACE);
    if (applied.length !== version) throw new Error(`schema version ${version}: applied ${applied.length} migrations`);
  } catch (error) {
    await dispose();
    throw error;
  }
  return { db, dispose };
}

let counter = 0;
/** A unique account id for one test. */
export function accountId(label = 'acct'): string {
  counter += 1;
  return `${label}_${process.pid}_${counter}_${randomBytes(3).toString('hex')}`;
}

export const USD = 10_000_000n;
