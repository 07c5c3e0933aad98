import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, openDatabase } from '@farebox/ledger';
import type { Database } from '@farebox/ledger';
import { databaseUrl, onPostgres } from './helpers.js';

// Two handles on one database: two pools on one fresh schema on PostgreSQL
// (two processes, in effect), the single PGlite session otherwise.
let first: Database;
let second: Database;
let schema: string | undefined;
const dirs: string[] = [];

beforeAll(async () => {
  if (onPostgres) {
    schema = `ledger_migrate_${process.pid}_${randomBytes(4).toString('hex')}`;
    first = await openDatabase({ url: databaseUrl, schema });
    second = await openDatabase({ url: databaseUrl, schema });
  } else {
    first = await openDatabase({ dataDir: 'memory://', env: {} });
    second = first;
  }
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
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function migrationDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'farebox-migrations-'));
  dirs.push(dir);
  for (const [name, sql] of Object.entries(files)) await writeFile(join(dir, name), sql);
  return dir;
}

describe('migrate', () => {
  it('applies each file once and in order, also when two processes migrate at once', async () => {
    const dir = await migrationDir({
      '0002_add_column.sql': 'ALTER TABLE widgets ADD COLUMN colour TEXT;',
      '0001_create.sql': 'CREATE TABLE widgets (id SERIAL PRIMARY KEY, name TEXT NOT NULL);',
    });
    const results = await Promise.all([migrate(first, dir, 'widgets'), migrate(second, dir, 'widgets')]);
    expect(results.map((r) => r.applied).sort()).toEqual([[], ['0001_create.sql', '0002_add_column.sql']]);
    expect((await migrate(first, dir, 'widgets')).applied).toEqual([]);
    await first.query(`INSERT INTO widgets (name, colour) VALUES ('a', 'red')`);
    const { rows } = await first.query(`SELECT version, name FROM farebox_migrations WHERE namespace = 'widgets' ORDER BY version`);
    expect(rows).toEqual([
      { version: 1, name: '0001_create.sql' },
      { version: 2, name: '0002_add_column.sql' },
    ]);
  });

  it('keeps namespaces apart, so other packages run their own directories through the same runner', async () => {
    const dir = await migrationDir({ '0001_create.sql': 'CREATE TABLE gadgets (id SERIAL PRIMARY KEY);' });
    expect((await migrate(first, dir, 'gadgets')).applied).toEqual(['0001_create.sql']);
    const { rows } = await first.query(`SELECT count(*) AS n FROM farebox_migrations WHERE namespace = 'gadgets'`);
    expect(rows[0]?.n).toBe('1');
  });

  it('refuses an applied migration whose file was edited', async () => {
    const dir = await migrationDir({ '0001_create.sql': 'CREATE TABLE edited (id SERIAL PRIMARY KEY);' });
    await migrate(first, dir, 'edited');
    await writeFile(join(dir, '0001_create.sql'), 'CREATE TABLE edited (id BIGSERIAL PRIMARY KEY);');
    await expect(migrate(first, dir, 'edited')).rejects.toMatchObject({ code: 'MIGRATION_CHANGED' });
  });

  it('applies nothing when one of the pending files fails', async () => {
    const dir = await migrationDir({
      '0001_ok.sql': 'CREATE TABLE half (id INT);',
      '0002_broken.sql': 'CREATE TABLE half_broken (id INT REFERENCES no_such_table (id));',
    });
    await expect(migrate(first, dir, 'half')).rejects.toMatchObject({ code: 'MIGRATION_FAILED' });
    const { rows } = await first.query(`SELECT to_regclass('half') AS t`);
    expect(rows[0]?.t).toBeNull();
  });

  it('refuses badly named files and namespaces', async () => {
    const dir = await migrationDir({ 'create.sql': 'SELECT 1;' });
    await expect(migrate(first, dir, 'bad')).rejects.toMatchObject({ code: 'MIGRATION_FAILED' });
    await expect(migrate(first, dir, 'Bad Name')).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });
});

describe('openDatabase', () => {
  it('reports every configuration problem at once', async () => {
    const error = await openDatabase({ env: {}, schema: 'Not-Valid', poolSize: 0 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'CONFIG' });
    expect((error as { data: { problems: string[] } }).data.problems).toHaveLength(3);
  });

  it('returns BIGINT as an exact decimal string', async () => {
    const { rows } = await first.query('SELECT 9223372036854775807::bigint AS max');
    expect(rows[0]?.max).toBe('9223372036854775807');
  });
});
