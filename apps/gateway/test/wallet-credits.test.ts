import { walletCreditsSuite } from './wallet-credits-suite.js';

// The model test of wallet-backed credits on one gateway with embedded PGlite (wallet-credits.pg.test.ts: two gateways on PostgreSQL).
walletCreditsSuite('wallet-backed credits (PGlite, one gateway)', { gateways: 1 });
