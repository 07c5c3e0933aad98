import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openDatabase, prepared } from '@farebox/ledger';
import type { Database } from '@farebox/ledger';
import { databaseUrl, onPostgres } from './helpers.js';

// Two handles on one database (two gateway instances, in effect, on
// PostgreSQL): one keeps prepared statements while the other migrates.
let first: Database;
let second: Database;
let schema: string | undefined;
const tag = randomBytes(4).toString('hex');

beforeAll(async () => {
  if (onPostgres) {
    schema = `ledger_prepared_${process.pid}_${tag}`;
    first = await openDatabase({ url: databaseUrl, schema, poolSize: 3 });
    second = await openDatabase({ url: databaseUrl, schema });
  } else {
    first = await openDatabase({ dataDir: 'memory://', env: {} });
    second = first;
  }
  await first.query('CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)');
  await first.query(`INSERT INTO items VALUES (1, 'one'), (2, 'two')`);
});

afterAll(async () => {
  await first?.close();
  if (second !== first) await second?.close();
  if (schema) {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  }
});

const BY_ID = prepared(`test_items_by_id_${tag}`, 'SELECT * FROM items WHERE id = $1');

it('runs a prepared statement like any other, on every pooled connection, in and out of transactions', async () => {
  const results = await Promise.all([1, 2, 1, 2, 1, 2].map((id) => first.query(BY_ID, [id])));
  expect(results.map((r) => r.rows[0]?.name)).toEqual(['one', 'two', 'one', 'two', 'one', 'two']);
  const inTx = await first.transaction(async (tx) => (await tx.query(BY_ID, [2])).rows[0]?.name);
  expect(inTx).toBe('two');
});

it('keeps working when another instance changes the table under a prepared plan', async () => {
  // Prepare it on every connection of the pool first.
  await Promise.all([1, 2, 1].map((id) => first.query(BY_ID, [id])));
  await second.query(`ALTER TABLE items ADD COLUMN label TEXT NOT NULL DEFAULT 'x'`);
  const { rows } = await first.query(BY_ID, [1]);
  expect(rows[0]).toEqual({ id: 1, name: 'one', label: 'x' });
  const inTx = await first.transaction(async (tx) => (await tx.query(BY_ID, [2])).rows[0]);
  expect(inTx).toEqual({ id: 2, name: 'two', label: 'x' });
});

it('refuses one name for two statements, and two names for one statement', () => {
  expect(() => prepared(`test_items_by_id_${tag}`, 'SELECT 1')).toThrow(`prepared statement name test_items_by_id_${tag} is taken`);
  expect(() => prepared(`test_other_${tag}`, 'SELECT * FROM items WHERE id = $1')).toThrow(`statement already prepared as test_items_by_id_${tag}`);
  expect(prepared(`test_items_by_id_${tag}`, 'SELECT * FROM items WHERE id = $1')).toBe('SELECT * FROM items WHERE id = $1');
});
