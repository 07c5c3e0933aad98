import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './process-kit.js';

const run = promisify(execFile);

/**
 * A PostgreSQL server of the test's own (initdb on a spare port, trust
 * authentication), so a test can kill the real server and start it again
 * without touching the one the other suites share. As root, the server runs
 * as the `postgres` user (PostgreSQL refuses root).
 */
export interface PgServer {
  readonly port: number;
  readonly url: string;
  /** Stops the server the way a crash does: `pg_ctl stop -m immediate` (every session cut, no checkpoint). */
  kill(): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  /** Stops it and removes its data. */
  close(): Promise<void>;
}

async function binDir(): Promise<string> {
  const versions = (await readdir('/usr/lib/postgresql')).sort((a, b) => Number(b) - Number(a));
  if (!versions[0]) throw new Error('no PostgreSQL under /usr/lib/postgresql');
  return `/usr/lib/postgresql/${versions[0]}/bin`;
}

export async function startPgServer(): Promise<PgServer> {
  const bin = await binDir();
  const root = process.getuid?.() === 0;
  const as = (cmd: string, args: string[]) => (root ? run('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args]) : run(join(bin, cmd), args));
  const dir = await mkdtemp(join(tmpdir(), 'farebox-pg-'));
  if (root) {
    await chmod(dir, 0o777);
    await run('chown', ['postgres', dir]);
  }
  const data = join(dir, 'data');
  await as('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50`;
  const start = async () => {
    await as('pg_ctl', ['start', '-w', '-D', data, '-l', join(dir, 'log'), '-o', options]);
  };
  await start();
  await as('createdb', ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', 'test']);
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/test`,
    async kill() {
      await as('pg_ctl', ['stop', '-m', 'immediate', '-D', data]);
    },
    start,
    async close() {
      await as('pg_ctl', ['stop', '-m', 'immediate', '-D', data]).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
