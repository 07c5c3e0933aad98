import { openDatabase, type Database } from './db.js';
import { Ledger } from './ledger.js';
import { LEDGER_MIGRATIONS_DIR, LEDGER_NAMESPACE, migrate, type MigrateResult } from './migrate.js';
import type { OpenLedgerOptions } from './types.js';

// Opening a ledger: its database and its own migrations.

/** Runs the ledger's own migrations on `db`. */
export function migrateLedger(db: Database): Promise<MigrateResult> {
  return migrate(db, LEDGER_MIGRATIONS_DIR, LEDGER_NAMESPACE);
}

/**
 * Opens the database ({@link openDatabase}), applies the ledger migrations
 * and returns the ledger. `ledger.close()` closes the database (and releases
 * the PGlite lock file).
 *
 * @example
 * const ledger = await openLedger({ url: process.env.DATABASE_URL, dataDir: './.farebox/db' });
 */
export async function openLedger(options: OpenLedgerOptions = {}): Promise<Ledger> {
  const db = await openDatabase(options);
  try {
    await migrateLedger(db);
  } catch (error) {
    await db.close();
    throw error;
  }
  return new Ledger(db, { ...(options.batch === undefined ? {} : { batch: options.batch }), ...(options.hooks ? { hooks: options.hooks } : {}) });
}
