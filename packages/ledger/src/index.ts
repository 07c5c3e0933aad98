export { LedgerError } from './errors.js';
export type { LedgerErrorCode } from './errors.js';
export { openDatabase, prepared } from './db.js';
export type { Database, OpenDatabaseOptions, Queryable } from './db.js';
export { LOCK_FILE_NAME } from './lock.js';
export { migrate, readMigrations, LEDGER_MIGRATIONS_DIR, LEDGER_NAMESPACE } from './migrate.js';
export type { MigrateResult, MigrationFile } from './migrate.js';
export { Ledger } from './ledger.js';
export { openLedger, migrateLedger } from './open.js';
export { hashRequest } from './idempotency.js';
export { parseTopupAmount } from './accounts.js';
export { exactRefunds } from './exact-refunds.js';
export type { ExactRefund, ExactRefundRefusal, ExactRefundRequest } from './exact-refunds.js';
export {
  SIGNUP_CREDIT,
  TOPUP_MAX,
  BALANCE_CAP,
  DEFAULT_HOLD_TIMEOUT_MS,
  LEDGER_MESSAGES,
  CYCLE_STATES,
  CYCLE_TRANSITIONS,
} from './types.js';
export type { BatchOptions } from './batch.js';
export type { Budget, BudgetUse } from './budgets.js';
export type { DeadInstancesReaped, ReapDeadOptions } from './liveness.js';
export type {
  AccountBalance,
  AdvanceData,
  AdvanceResult,
  AnalyticsPoint,
  ChannelDue,
  ChannelPayment,
  ChannelPostResult,
  ChannelRefusal,
  ChannelReserveResult,
  ChannelState,
  ChannelVoucherInput,
  ChannelWithdrawal,
  ChannelWithdrawalInput,
  ChannelWithdrawalResult,
  ClaimResult,
  CycleState,
  Earning,
  ExactIntent,
  ExactIntentInput,
  ExactPayment,
  ExactPaymentInput,
  FundingBatch,
  Hold,
  HoldOptions,
  HoldResult,
  HoldState,
  IdempotencyClaim,
  IdempotencyOptions,
  IdempotentResult,
  CreditedTopup,
  CycleMove,
  LedgerHooks,
  LedgerOptions,
  LedgerTransaction,
  OpenAccountResult,
  OpenLedgerOptions,
  PaidWith,
  PaymentChannel,
  PaymentChannelInput,
  PendingVoucher,
  PlatformStats,
  PostOptions,
  PublisherTotals,
  ResolveResult,
  ServiceStats,
  SettlementCycle,
  SettlementStep,
  SponsoredFees,
  TopupResult,
  TransactionStatus,
  VerifyMismatch,
  VerifyReport,
  WalletCredit,
  WalletPayment,
  WalletPaymentInput,
} from './types.js';
