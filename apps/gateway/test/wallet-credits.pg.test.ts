import { walletCreditsSuite } from './wallet-credits-suite.js';

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

// The model test of wallet-backed credits across two gateways on one PostgreSQL: each batch's requests go to
// either gateway, so one wallet's payments race across processes' queues (a stale sequence number is rebuilt).
walletCreditsSuite('wallet-backed credits (two gateways on one PostgreSQL)', {
  gateways: 2,
  database: () => ({ databaseUrl: DATABASE_URL, databaseSchema: `wallet_credits_${process.pid}_${Date.now()}` }),
});
