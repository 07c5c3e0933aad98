import { amountFields, PLATFORM_FEE_PCT, toJsonInteger, toUsd } from '@farebox/protocol';
import type { Ledger } from '@farebox/ledger';
import type { Accounts, User } from '../auth/accounts.js';
import type { SettlementView } from '../settlement/view.js';
import { intParam, type AmountFieldsOf, type ServiceView, type WalletStatus } from '../views.js';
import type { WalletReader } from './account.js';
import { requirePublisher } from './publisher-rule.js';

/** `GET /v1/publisher/overview`: earnings, settlement totals, services and the payout wallet. */
export type PublisherOverview = {
  publisher_name: string | null;
  payout_wallet: string;
  wallet_status: WalletStatus;
  fee: { pct: number };
  calls: number;
  services: ServiceView[];
} & AmountFieldsOf<'earned'> &
  AmountFieldsOf<'pending'> &
  AmountFieldsOf<'settled'> &
  AmountFieldsOf<'gross'> &
  AmountFieldsOf<'fee'> &
  AmountFieldsOf<'wallet'>;

/** One day of `GET /v1/publisher/analytics`. */
export interface AnalyticsDay {
  day: string;
  calls: number;
  earned_base_units: number;
  earned_lamports: number;
  earned_asset: number;
  earned_sol: number;
  earned_usd: number;
}

/** `POST /v1/publisher/settle`. */
export interface SettleResult {
  settled: boolean;
  message?: string;
  settlement: SettlementView | null;
}

/** A publisher's side of the account: activation, earnings and their settlement. */
export interface PublisherService {
  activate(user: User, body: unknown): Promise<{ is_publisher: true; publisher_name: string | null; payout_wallet: string; wallet_status: WalletStatus }>;
  overview(user: User): Promise<PublisherOverview>;
  settlements(user: User, limit: unknown): Promise<SettlementView[]>;
  analytics(user: User, days: unknown): Promise<AnalyticsDay[]>;
  /** Closes the publisher's current cycle and runs it to done. */
  settle(user: User): Promise<SettleResult>;
}

export interface PublisherServiceDeps {
  ledger: Ledger;
  accounts: Pick<Accounts, 'activatePublisher'>;
  wallet: WalletReader;
  mine(user: User): Promise<ServiceView[]>;
  settlement: { list(owner: string, limit: number): Promise<SettlementView[]>; settle(owner: string): Promise<SettleResult> };
}

export function createPublisherService({ ledger, accounts, wallet, mine, settlement }: PublisherServiceDeps): PublisherService {
  return {
    async activate(user, body) {
      const updated = await accounts.activatePublisher(user.id, body);
      return {
        is_publisher: true,
        publisher_name: updated.publisherName,
        payout_wallet: updated.walletAddress,
        wallet_status: (await wallet.walletBalance(updated)).status,
      };
    },
    async overview(user) {
      requirePublisher(user);
      const totals = await ledger.publisherTotals(user.walletAddress);
      const services = await mine(user);
      const w = await wallet.walletBalance(user);
      return {
        publisher_name: user.publisherName,
        payout_wallet: user.walletAddress,
        wallet_status: w.status,
        fee: { pct: PLATFORM_FEE_PCT },
        calls: totals.calls,
        ...amountFields('earned', totals.earned),
        ...amountFields('pending', totals.pending),
        ...amountFields('settled', totals.settled),
        ...amountFields('gross', totals.gross),
        ...amountFields('fee', totals.fee),
        services,
        ...amountFields('wallet', w.units),
      };
    },
    async settlements(user, limit) {
      requirePublisher(user);
      return settlement.list(user.walletAddress, intParam(limit, 'limit', 1, 200, 50));
    },
    async analytics(user, days) {
      requirePublisher(user);
      const n = intParam(days, 'days', 1, 90, 30);
      const points = await ledger.publisherAnalytics(user.walletAddress, n);
      return points.map((p) => ({
        day: p.day,
        calls: p.calls,
        earned_base_units: toJsonInteger(p.earned),
        earned_lamports: toJsonInteger(p.earned),
        earned_asset: toUsd(p.earned),
        earned_sol: toJsonInteger(p.earned),
        earned_usd: toUsd(p.earned),
      }));
    },
    async settle(user) {
      requirePublisher(user);
      return settlement.settle(user.walletAddress);
    },
  };
}
