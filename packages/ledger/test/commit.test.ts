import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openLedger, type Ledger } from '@farebox/ledger';
import { databaseUrl, onPostgres } from './helpers.js';

// On a PostgreSQL server a hold commits without waiting for its WAL flush
// (its own transaction only); the post after it waits, which flushes the hold
// too. One pooled connection: whatever a hold leaves on its session, the
// next statement on it sees.
let ledger: Ledger;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  if (onPostgres) {
    const schema = `ledger_commit_${process.pid}_${randomBytes(4).toString('hex')}`;
    ledger = await openLedger({ url: databaseUrl, schema, poolSize: 1, batch: { maxInFlight: 1 } });
    cleanup = async () => {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => client.end());
    };
  } else {
    const dataDir = await mkdtemp(join(tmpdir(), 'farebox-ledger-'));
    ledger = await openLedger({ dataDir, env: {}, batch: { maxInFlight: 1 } });
    cleanup = () => rm(dataDir, { recursive: true, force: true });
  }
});
afterAll(async () => {
  await ledger?.close();
  await cleanup?.();
});

const commitMode = async () => (await ledger.db.query('SHOW synchronous_commit')).rows[0]?.synchronous_commit;

it('leaves every other statement durable: after single and batched holds the session still waits for its commits', async () => {
  await ledger.openAccount('commit_a');
  await ledger.openAccount('commit_b');
  const { hold } = await ledger.hold('commit_a', 1_000n, { callId: 'c1', service: 's' });
  expect(await commitMode()).toBe('on');
  // A burst: the first goes alone, the rest as one batched statement.
  const burst = await Promise.all(['commit_a', 'commit_b', 'commit_a', 'commit_b'].map((id, i) => ledger.hold(id, 10n, { callId: `b${i}`, service: 's' })));
  expect(await commitMode()).toBe('on');
  const posted = await ledger.post(hold.id, { publisherOwner: 'GOWNER', service: 's', gross: 1_000n });
  expect(posted.applied).toBe(true);
  for (const r of burst) await ledger.void(r.hold.id, 'test');
  expect(await commitMode()).toBe('on');
  // An idempotency claim (asynchronous commit on a server, like a hold) and a keyed hold leave it so too.
  const claimed = await ledger.withIdempotency('commit_a', 'k-commit', 'h', async () => {
    expect(await commitMode()).toBe('on');
    return (await ledger.hold('commit_a', 10n, { callId: 'k1', service: 's', idempotencyKey: 'k-commit' })).hold.id;
  });
  expect(claimed.replayed).toBe(false);
  expect(await commitMode()).toBe('on');
  expect((await ledger.withIdempotency('commit_a', 'k-commit', 'h', async () => 'again')).response).toBe(claimed.response);
  expect((await ledger.verify()).ok).toBe(true);
});
