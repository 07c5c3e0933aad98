import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Database } from './db.js';
import { LedgerError } from './errors.js';

/** The ledger's own migrations, shipped in the package. */
export const LEDGER_MIGRATIONS_DIR = fileURLToPath(new URL('../migrations/', import.meta.url));
/** Namespace the ledger's migrations are recorded under. */
export const LEDGER_NAMESPACE = 'ledger';

const FILE = /^(\d{4})_[A-Za-z0-9_.-]+\.sql$/;
const NAMESPACE = /^[a-z][a-z0-9_-]{0,62}$/;

export interface MigrationFile {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

export interface MigrateResult {
  namespace: string;
  /** File names applied by this run, in order (empty when already up to date). */
  applied: string[];
  /** Highest version recorded after the run. */
  version: number;
}

/** Reads `NNNN_name.sql` files of a directory, in version order. */
export async function readMigrations(dir: string): Promise<MigrationFile[]> {
  const names = (await readdir(dir)).filter((n) => n.endsWith('.sql')).sort();
  const files: MigrationFile[] = [];
  for (const name of names) {
    const m = FILE.exec(name);
    if (!m) throw new LedgerError('MIGRATION_FAILED', `migration file ${name} does not match NNNN_name.sql`, { dir, name });
    const version = Number(m[1]);
    if (files.some((f) => f.version === version)) {
      throw new LedgerError('MIGRATION_FAILED', `two migrations share version ${version} in ${dir}`, { dir, version });
    }
    const sql = await readFile(join(dir, name), 'utf8');
    files.push({ version, name, sql, checksum: createHash('sha256').update(sql).digest('hex') });
  }
  return files;
}

/**
 * Applies the pending `NNNN_name.sql` files of `dir`, once each and in order,
 * recording them in `farebox_migrations` under `namespace`. All pending files
 * run in one transaction behind an advisory lock, so processes opening the same
 * database at once apply each file exactly once. A recorded file whose content
 * changed gives `MIGRATION_CHANGED`.
 *
 * @example
 * await migrate(db, fileURLToPath(new URL('../migrations/', import.meta.url)), 'gateway');
 */
export async function migrate(db: Database, dir: string, namespace: string): Promise<MigrateResult> {
  if (!NAMESPACE.test(namespace)) {
    throw new LedgerError('INVALID_INPUT', `migration namespace must match ${NAMESPACE.source}`, { namespace });
  }
  const files = await readMigrations(dir);
  return db.transaction(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('farebox_migrations:' || current_schema()))`);
    await tx.query(`CREATE TABLE IF NOT EXISTS farebox_migrations (
      namespace   TEXT NOT NULL,
      version     INTEGER NOT NULL,
      name        TEXT NOT NULL,
      checksum    TEXT NOT NULL,
      applied_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
      PRIMARY KEY (namespace, version)
    )`);
    const { rows } = await tx.query<{ version: number; name: string; checksum: string }>(
      'SELECT version, name, checksum FROM farebox_migrations WHERE namespace = $1 ORDER BY version',
      [namespace],
    );
    const done = new Map(rows.map((r) => [r.version, r]));
    const applied: string[] = [];
    for (const file of files) {
      const recorded = done.get(file.version);
      if (recorded) {
        if (recorded.checksum !== file.checksum) {
          throw new LedgerError(
            'MIGRATION_CHANGED',
            `migration ${namespace}/${file.name} was applied with different content; add a new migration instead of editing it`,
            { namespace, name: file.name },
          );
        }
        continue;
      }
      try {
        await tx.query(file.sql);
      } catch (error) {
        throw new LedgerError(
          'MIGRATION_FAILED',
          `migration ${namespace}/${file.name} failed: ${(error as Error).message}`,
          { namespace, name: file.name },
          { cause: error },
        );
      }
      await tx.query('INSERT INTO farebox_migrations (namespace, version, name, checksum) VALUES ($1, $2, $3, $4)', [
        namespace,
        file.version,
        file.name,
        file.checksum,
      ]);
      applied.push(file.name);
    }
    const version = Math.max(0, ...rows.map((r) => r.version), ...files.map((f) => f.version));
    return { namespace, applied, version };
  });
}
