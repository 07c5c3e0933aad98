import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from './harness.js';
import { eventually } from '@farebox/test-kit';

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

describe('PostgreSQL connections dropped under load', () => {
  let h: Harness;
  const app = `farebox_fault_${process.pid}`;
  beforeAll(async () => {
    h = await startHarness('postgres', { databaseUrl: `${DATABASE_URL}${DATABASE_URL.includes('?') ? '&' : '?'}application_name=${app}` });
    await h.publish('steady', { price: '0.01' });
  }, 120_000);
  afterAll(() => h?.close());

  it('answers 503 to the calls caught in the outage, recovers, and loses no money', async () => {
    const u = await h.user();
    // Enough credits that the load cannot use them up (5 USD is 500 calls, a couple of seconds' worth).
    expect((await u.api('/v1/topup', { body: { amount: 1000 } })).status).toBe(200);
    const admin = new pg.Client({ connectionString: DATABASE_URL });
    await admin.connect();
    let stop = false;
    const statuses: number[] = [];
    const workers = Array.from({ length: 8 }, async () => {
      while (!stop) {
        const r = await u.api('/v1/call', { body: { service: 'steady', payload: {} } }).catch(() => ({ status: 0 }));
        statuses.push(r.status);
      }
    });
    const answered = (n: number) => eventually(`${n} calls answered`, () => statuses.length >= n, { timeoutMs: 20_000 });
    const connected = () =>
      eventually(
        'the gateway has its connections again',
        async () => ((await admin.query('SELECT 1 FROM pg_stat_activity WHERE application_name = $1', [app])).rowCount ?? 0) > 0,
        { timeoutMs: 20_000 },
      );
    await answered(20);
    // What a server restart looks like from the gateway: every connection dies at once, three times, each time under load.
    let killed = 0;
    for (let i = 0; i < 3; i++) {
      await connected();
      const { rowCount } = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [app]);
      killed += rowCount ?? 0;
      await answered(statuses.length + 8);
    }
    // The load goes on until calls succeed again.
    const recovered = statuses.length;
    await eventually('calls succeed again under load', () => statuses.slice(recovered).includes(200), { timeoutMs: 20_000 });
    stop = true;
    await Promise.all(workers);
    await admin.end();
    expect(killed).toBeGreaterThan(0);

    // After the outage the gateway answers normally again.
    const after = await u.api('/v1/call', { body: { service: 'steady', payload: {} } });
    expect(after.status).toBe(200);
    // A call caught by the cut answers 503 (database unavailable, retry), never 500 internal error.
    expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([]);

    // Every successful call was charged exactly once; every failed one was not (or was refunded).
    const ok = statuses.filter((s) => s === 200).length + 1;
    await h.gw.core.ledger.reapExpiredHolds(0);
    const balance = (await u.api('/v1/balance')).body.balance_base_units as number;
    // More calls than one transactions page holds: count the posted holds in the ledger.
    const { rows } = await h.gw.core.ledger.db.query<{ n: string }>(`SELECT count(*) AS n FROM holds WHERE account_id = $1 AND state = 'posted'`, [u.id]);
    const posted = Number(rows[0]!.n);
    expect(balance).toBe(50_000_000 + 10_000_000_000 - posted * 100_000);
    expect(posted).toBeGreaterThanOrEqual(ok);
    expect((await h.gw.core.ledger.verify()).ok).toBe(true);
  }, 90_000);
});
