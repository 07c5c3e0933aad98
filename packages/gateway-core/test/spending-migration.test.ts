import { copyFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ledger, LedgerError, migrate, migrateLedger, openDatabase, type Database } from '@farebox/ledger';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { GATEWAY_MIGRATIONS_DIR } from '../src/index.js';
import { budgetFor, policyFromRow } from '../src/auth/policy.js';

// Gateway schema 8 moves the OAuth connections' daily limits into spending
// policies of period `day`, with what each spent today, so the limit goes on
// where it was: a database as schema 7 left it, upgraded.

let db: Database;
let dir: string;
const today = new Date().toISOString().slice(0, 10);
const USD = 10_000_000n;

beforeAll(async () => {
  db = await openDatabase({ dataDir: 'memory://', env: {} });
  await migrateLedger(db);
  dir = await mkdtemp(join(tmpdir(), 'farebox-gw-v7-'));
  for (const f of (await readdir(GATEWAY_MIGRATIONS_DIR)).filter((n) => n.endsWith('.sql') && Number(n.slice(0, 4)) <= 7)) {
    await copyFile(join(GATEWAY_MIGRATIONS_DIR, f), join(dir, f));
  }
  await migrate(db, dir, 'gateway');
  await db.query(
    `INSERT INTO gw_users (id, email, email_normalized, password_hash, wallet_address) VALUES ('acct_m', 'm@example.com', 'm@example.com', 'x', 'GX')`,
  );
  await db.query(
    `INSERT INTO gw_oauth_clients (client_id, token_endpoint_auth_method, client_name, redirect_uris, metadata) VALUES ('fbc_m', 'none', 'App', '[]', '{}')`,
  );
  await db.query(
    `INSERT INTO gw_oauth_connections (id, user_id, client_id, scopes, daily_limit) VALUES
    ('conn_limited', 'acct_m', 'fbc_m', 'agents:call', $1)`,
    [(USD / 10n).toString()],
  );
  // A connection of another client without a daily limit.
  await db.query(
    `INSERT INTO gw_oauth_clients (client_id, token_endpoint_auth_method, client_name, redirect_uris, metadata) VALUES ('fbc_free', 'none', 'Free', '[]', '{}')`,
  );
  await db.query(
    `INSERT INTO gw_oauth_connections (id, user_id, client_id, scopes, daily_limit) VALUES ('conn_free', 'acct_m', 'fbc_free', 'agents:call', NULL)`,
  );
  // 0.07 of its 0.1 spent today, and a day long past.
  await db.query(`INSERT INTO gw_oauth_spend (connection_id, day, spent) VALUES ('conn_limited', $1::date, $2), ('conn_limited', '2020-01-01', 5)`, [
    today,
    ((USD * 7n) / 100n).toString(),
  ]);
  await migrate(db, GATEWAY_MIGRATIONS_DIR, 'gateway');
});

afterAll(async () => {
  await db?.close();
  await rm(dir, { recursive: true, force: true });
});

it("moves a connection's daily limit into a policy of period day, with today's spending in its budget", async () => {
  const { rows } = await db.query(`SELECT id, limit_units, limit_period, allowed_services, max_call_units FROM gw_oauth_connections ORDER BY id`);
  const limited = rows.find((r) => r.id === 'conn_limited')!;
  expect(policyFromRow(limited as never)).toEqual({ limit: USD / 10n, period: 'day', allowedServices: null, maxCall: null });
  expect(policyFromRow(rows.find((r) => r.id === 'conn_free') as never)).toBeUndefined();
  const { rows: budgets } = await db.query('SELECT credential, period, lim, spent, held FROM credential_budgets ORDER BY period');
  expect(budgets.map((b) => ({ ...b, lim: String(b.lim), spent: String(b.spent), held: String(b.held) }))).toEqual([
    { credential: 'conn_limited', period: `day:${today}`, lim: String(USD / 10n), spent: String((USD * 7n) / 100n), held: '0' },
  ]);
});

it('goes on where the limit was: 0.03 left today, so a call of 0.05 is refused and one of 0.03 is held', async () => {
  const ledger = new Ledger(db);
  await ledger.openAccount('acct_m');
  const budget = budgetFor(
    'conn_limited',
    policyFromRow({ limit_units: String(USD / 10n), limit_period: 'day', allowed_services: null, max_call_units: null }),
    Date.now(),
  )!;
  const refused = await ledger.hold('acct_m', USD / 20n, { callId: 'c1', service: 'echo', budget }).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(LedgerError);
  expect((refused as LedgerError).data).toMatchObject({ remaining: ((USD * 3n) / 100n).toString() });
  expect((await ledger.hold('acct_m', (USD * 3n) / 100n, { callId: 'c2', service: 'echo', budget })).hold.state).toBe('pending');
});
