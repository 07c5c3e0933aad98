import pg from 'pg';

/** The benches' PostgreSQL (DATABASE_URL, else the local test database) when it answers within a second; else undefined (PGlite). */
export async function postgresUrl(): Promise<string | undefined> {
  const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  try {
    await client.connect();
    await client.end();
    return url;
  } catch {
    return undefined;
  }
}
