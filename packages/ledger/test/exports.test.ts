import { expect, it } from 'vitest';
import * as ledger from '@farebox/ledger';

it('exports exactly the documented runtime names', () => {
  expect(Object.keys(ledger).sort()).toEqual([
    'BALANCE_CAP',
    'CYCLE_STATES',
    'CYCLE_TRANSITIONS',
    'DEFAULT_HOLD_TIMEOUT_MS',
    'LEDGER_MESSAGES',
    'LEDGER_MIGRATIONS_DIR',
    'LEDGER_NAMESPACE',
    'LOCK_FILE_NAME',
    'Ledger',
    'LedgerError',
    'SIGNUP_CREDIT',
    'TOPUP_MAX',
    'exactRefunds',
    'hashRequest',
    'migrate',
    'migrateLedger',
    'openDatabase',
    'openLedger',
    'parseTopupAmount',
    'prepared',
    'readMigrations',
  ]);
});

it('ships its migrations next to the code', async () => {
  const files = await ledger.readMigrations(ledger.LEDGER_MIGRATIONS_DIR);
  expect(files.map((f) => f.name)).toEqual([
    '0001_ledger.sql',
    '0002_wallet_payments.sql',
    '0003_hold_batch.sql',
    '0004_reference_checks.sql',
    '0005_earnings_guard.sql',
    '0006_cycle_totals.sql',
    '0007_settlement_references.sql',
    '0008_time_ordered_ids.sql',
    '0009_call_path_indexes.sql',
    '0010_wallet_credits.sql',
    '0011_cycle_fee.sql',
    '0012_instances.sql',
    '0013_credential_budgets.sql',
    '0014_wallet_payment_budgets.sql',
    '0015_exact_payments.sql',
    '0016_exact_intents.sql',
    '0017_exact_refunds.sql',
    '0018_exact_payment_holds.sql',
    '0019_payment_channels.sql',
  ]);
});
