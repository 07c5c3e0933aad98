import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openLedger } from '@farebox/ledger';
import type { Ledger } from '@farebox/ledger';

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
export async function openTestLedger(): Promise<TestLedger> {
  if (onPostgres) {
    const schema = `ledger_test_${process.pid}_${randomBytes(4).toString('hex')}`;
    const ledger = await openLedger({ url: databaseUrl, schema, poolSize: 20 });
    return {
      ledger,
      backend: 'postgres',
      async dispose() {
        await ledger.close();
        const client = new pg.Client({ connectionString: databaseUrl });
        await client.connect();
        try {
          await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        } finally {
          await client.end();
        }
      },
    };
  }
  const dataDir = await mkdtemp(join(tmpdir(), 'farebox-ledger-'));
  const ledger = await openLedger({ dataDir, env: {} });
  return {
    ledger,
    backend: 'pglite',
    async dispose() {
      await ledger.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

let counter = 0;
/** A unique account id for one test. */
export function accountId(label = 'acct'): string {
  counter += 1;
  return `${label}_${process.pid}_${counter}_${randomBytes(3).toString('hex')}`;
}

export const USD = 10_000_000n;
