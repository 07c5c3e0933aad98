import { publisherLinks } from '@farebox/contract';
import { amountFields, PLATFORM_FEE_PCT, toJsonInteger, toUsd } from '@farebox/protocol';
import type { Ledger } from '@farebox/ledger';
import type { Accounts, User } from '../auth/accounts.js';
import type { SettlementView } from '../settlement/view.js';
import { intParam, type AmountFieldsOf, type ServiceView, type WalletStatus } from '../views.js';
import type { WalletReader } from './account.js';
import { parse } from './input.js';
import { ownerKey, type PublisherLinks } from './publisher-links.js';
import { requirePublisher } from './publisher-rule.js';

/** `GET /v1/publisher/overview`: earnings, settlement totals, services and the payout wallet. */
export type PublisherOverview = {
  publisher_name: string | null;
  payout_wallet: string;
  wallet_status: WalletStatus;
  fee: { pct: number };
  calls: number;
  services: ServiceView[];
  /** The owner keys linked to the account (services registered with their own key), whose earnings are counted here too. */
  linked_owners: string[];
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
  /** Every cycle settled now: the account wallet's and each linked owner key's. */
  settlements?: SettlementView[];
}

/** `GET /v1/publisher/by-owner/:owner`: one owner key's services, earnings and payouts (no credential). */
export type OwnerEarnings = {
  owner: string;
  fee: { pct: number };
  calls: number;
  services: ServiceView[];
  payouts: SettlementView[];
} & AmountFieldsOf<'gross'> &
  AmountFieldsOf<'fee'> &
  AmountFieldsOf<'net'> &
  AmountFieldsOf<'pending'> &
  AmountFieldsOf<'settled'>;

/** A publisher's side of the account: activation, earnings and their settlement. */
export interface PublisherService {
  activate(user: User, body: unknown): Promise<{ is_publisher: true; publisher_name: string | null; payout_wallet: string; wallet_status: WalletStatus }>;
  overview(user: User): Promise<PublisherOverview>;
  settlements(user: User, limit: unknown): Promise<SettlementView[]>;
  analytics(user: User, days: unknown): Promise<AnalyticsDay[]>;
  /** Closes the publisher's current cycles (its wallet's and each linked key's) and runs them to done. */
  settle(user: User): Promise<SettleResult>;
  linkChallenge(user: User, body: unknown): Promise<{ owner: string; challenge: string; expires_at: string }>;
  link(user: User, body: unknown): Promise<{ owner: string; linked: true; linked_at: string; services: ServiceView[] }>;
  byOwner(owner: string): Promise<OwnerEarnings>;
}

export interface PublisherServiceDeps {
  ledger: Ledger;
  accounts: Pick<Accounts, 'activatePublisher'>;
  wallet: WalletReader;
  mine(user: User): Promise<ServiceView[]>;
  /** The catalog's services registered under an owner key. */
  ownedBy(owner: string): Promise<ServiceView[]>;
  links: PublisherLinks;
  settlement: { list(owner: string, limit: number): Promise<SettlementView[]>; settle(owner: string): Promise<SettleResult> };
}

export function createPublisherService({ ledger, accounts, wallet, mine, ownedBy, links, settlement }: PublisherServiceDeps): PublisherService {
  /** The account's wallet, then each owner key linked to it. */
  const ownersOf = async (user: User) => [user.walletAddress, ...(await links.owners(user.id)).filter((o) => o !== user.walletAddress)];
  async function totalsOf(owners: string[]) {
    const all = await Promise.all(owners.map((o) => ledger.publisherTotals(o)));
    const sum = (k: 'gross' | 'fee' | 'earned' | 'pending' | 'settled') => all.reduce((a, t) => a + t[k], 0n);
    return {
      calls: all.reduce((a, t) => a + t.calls, 0),
      gross: sum('gross'),
      fee: sum('fee'),
      earned: sum('earned'),
      pending: sum('pending'),
      settled: sum('settled'),
    };
  }
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
      const owners = await ownersOf(user);
      const totals = await totalsOf(owners);
      const services = [...(await mine(user)), ...(await Promise.all(owners.slice(1).map((o) => ownedBy(o)))).flat()];
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
        linked_owners: owners.slice(1),
        ...amountFields('wallet', w.units),
      };
    },
    async settlements(user, limit) {
      requirePublisher(user);
      const n = intParam(limit, 'limit', 1, 200, 50);
      const lists = await Promise.all((await ownersOf(user)).map((o) => settlement.list(o, n)));
      return lists
        .flat()
        .sort((a, b) => b.opened_at.localeCompare(a.opened_at) || b.id.localeCompare(a.id))
        .slice(0, n);
    },
    async analytics(user, days) {
      requirePublisher(user);
      const n = intParam(days, 'days', 1, 90, 30);
      const perOwner = await Promise.all((await ownersOf(user)).map((o) => ledger.publisherAnalytics(o, n)));
      const points = perOwner[0]!.map((p, i) => ({
        day: p.day,
        calls: perOwner.reduce((a, l) => a + (l[i]?.calls ?? 0), 0),
        earned: perOwner.reduce((a, l) => a + (l[i]?.earned ?? 0n), 0n),
      }));
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
      const results: SettleResult[] = [];
      for (const owner of await ownersOf(user)) results.push(await settlement.settle(owner));
      const done = results.flatMap((r) => (r.settlement && r.settled ? [r.settlement] : []));
      if (done.length === 0) return { ...results[0]!, settlements: [] };
      return { settled: true, settlement: done[0]!, settlements: done };
    },
    async linkChallenge(user, body) {
      requirePublisher(user);
      return links.challenge(user, parse(publisherLinks.LinkChallengeBody, body).owner);
    },
    async link(user, body) {
      requirePublisher(user);
      const linked = await links.link(user, parse(publisherLinks.LinkBody, body));
      return { ...linked, linked: true, services: await ownedBy(linked.owner) };
    },
    async byOwner(owner) {
      ownerKey(owner);
      const [t, services, payouts] = await Promise.all([ledger.publisherTotals(owner), ownedBy(owner), settlement.list(owner, 50)]);
      return {
        owner,
        fee: { pct: PLATFORM_FEE_PCT },
        calls: t.calls,
        ...amountFields('gross', t.gross),
        ...amountFields('fee', t.fee),
        ...amountFields('net', t.earned),
        ...amountFields('pending', t.pending),
        ...amountFields('settled', t.settled),
        services,
        payouts,
      };
    },
  };
}
