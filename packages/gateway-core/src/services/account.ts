import { inputs } from '@farebox/contract';
import { toJsonInteger, toUsd } from '@farebox/protocol';
import { parseTopupAmount, type Ledger } from '@farebox/ledger';
import type { NetworkConfig } from '@farebox/stellar';
import type { User } from '../auth/accounts.js';
import { translated } from '../ledger-errors.js';
import type { Topups, TopupView } from '../topups.js';
import { balanceView, intParam, transactionView, type BalanceView, type TransactionView, type WalletStatus } from '../views.js';
import type { WalletProvisioning } from '../wallet-provisioning.js';
import { parse } from './input.js';

/** `GET /v1/me`: the account and its balance. */
export type MeView = {
  id: string;
  email: string;
  custodial_wallet: string;
  is_publisher: boolean;
  publisher_name: string | null;
  created_at: string;
} & BalanceView;

/** `GET /v1/wallet`: the account's custodial wallet on the settlement network. */
export interface WalletView {
  pubkey: string;
  asset: 'USDC';
  asset_issuer: string;
  base_units: number;
  lamports: number;
  asset_amount: number;
  sol: number;
  status: WalletStatus;
  explorer_url: string;
  master_wallet: string;
}

/** `POST /v1/topup`: the new balance and the top-up. */
export type TopupResult = BalanceView & { topup: TopupView };

/** What an account holder reads and does with their own money. */
export interface AccountService {
  me(user: User): Promise<MeView>;
  balance(user: User): Promise<BalanceView>;
  wallet(user: User): Promise<WalletView>;
  /** Paid on chain from the account's wallet (or free where `FAREBOX_FREE_TOPUPS` allows it). */
  topup(user: User, body: unknown, idempotencyKey?: string): Promise<TopupResult>;
  transactions(user: User, limit: unknown): Promise<TransactionView[]>;
}

/** The USDC in an account's wallet and whether the wallet is usable yet. */
export interface WalletReader {
  /** `provisioning` until the wallet's set-up job has created it and set its trustline. */
  walletBalance(user: User): Promise<{ units: bigint; status: WalletStatus }>;
  /** Credits and wallet together (the Balance object). */
  balanceOf(user: User): Promise<BalanceView>;
}

export function createWalletReader(deps: { ledger: Ledger; balances: (address: string) => Promise<{ exists: boolean; usdc: bigint | null }> }): WalletReader {
  async function walletBalance(user: User): Promise<{ units: bigint; status: WalletStatus }> {
    try {
      const b = await deps.balances(user.walletAddress);
      if (!b.exists || b.usdc === null) return { units: 0n, status: 'provisioning' };
      return { units: b.usdc, status: 'ok' };
    } catch {
      return { units: 0n, status: 'unavailable' };
    }
  }
  return {
    walletBalance,
    async balanceOf(user) {
      const [c, w] = await Promise.all([translated(() => deps.ledger.balance(user.id)), walletBalance(user)]);
      return balanceView(c.balance, w.units, w.status);
    },
  };
}

export interface AccountServiceDeps {
  ledger: Ledger;
  network: NetworkConfig;
  treasuryAddress: string;
  topups: Topups;
  provisioning: WalletProvisioning;
  wallet: WalletReader;
}

export function createAccountService({ ledger, network, treasuryAddress, topups, provisioning, wallet }: AccountServiceDeps): AccountService {
  return {
    async me(user) {
      return {
        id: user.id,
        email: user.email,
        custodial_wallet: user.walletAddress,
        is_publisher: user.isPublisher,
        publisher_name: user.publisherName,
        created_at: user.createdAt.toISOString(),
        ...(await wallet.balanceOf(user)),
      };
    },
    balance: (user) => wallet.balanceOf(user),
    async wallet(user) {
      const w = await wallet.walletBalance(user);
      if (w.status === 'provisioning') provisioning.kick();
      return {
        pubkey: user.walletAddress,
        asset: 'USDC',
        asset_issuer: network.usdc.issuer,
        base_units: toJsonInteger(w.units),
        lamports: toJsonInteger(w.units),
        asset_amount: toUsd(w.units),
        sol: toJsonInteger(w.units),
        status: w.status,
        explorer_url: network.explorer.account(user.walletAddress),
        master_wallet: treasuryAddress,
      };
    },
    async topup(user, body, idempotencyKey) {
      // The contract's TopupBody: `amount` is a JSON number, 0 < amount <= 1000 ("5" is refused like any other bad amount).
      const { amount } = parse(inputs.TopupBody, body);
      const units = await translated(async () => parseTopupAmount(amount));
      return topups.topup(user, units, idempotencyKey, async (topup) => ({ ...(await wallet.balanceOf(user)), topup }));
    },
    async transactions(user, limit) {
      const n = intParam(limit, 'limit', 1, 500, 50);
      return (await translated(() => ledger.transactions(user.id, n))).map(transactionView);
    },
  };
}
