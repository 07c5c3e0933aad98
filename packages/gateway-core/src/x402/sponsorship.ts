// The network fees the facilitator sponsors, and their bounds per UTC day.
// A sponsored fee should buy a real payment: a settle that fails on chain (the
// payer moved its USDC away after the simulation) spends the fee for nothing,
// so that fee stays counted against the payer and the service, the payer is
// not sponsored again that day, and what payers with no settled payment yet
// may spend (their settles and everyone's failures) is a part of the total
// held apart: throwaway payers can use it up, never the rest of the total.
import { rpc } from '@stellar/stellar-sdk';
import type { Ledger } from '@farebox/ledger';
import type { X402Settings } from './config.js';
import { feesOf } from './transfer.js';

/** Builds the refusal the facilitator answers with (reason, message, status, headers, the rule for logs and metrics). */
export type Refuse = (reason: string, message: string, status: number, headers: Record<string, string>, rule: string) => Error;

/** The keys of the ledger's `sponsored_fees` rows (per UTC day) besides a payer's own (its address) and the total (`*`). */
export const SPONSORED_KEYS = {
  /** A payer's fees spent on settles that failed on chain (`settles` counts them). */
  failed: (payer: string) => `failed:${payer}`,
  /** What payers with no settled payment hold of the total, and failed settles spent, everywhere. */
  newPayers: 'new:*',
  /** The same for one service. */
  newPayersOf: (service: string) => `new:svc:${service}`,
} as const;

const UNBOUNDED = 9_223_372_036_854_775_807n;

export const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
export function secondsToUtcMidnight(ms: number): number {
  const d = new Date(ms);
  return Math.max(1, Math.ceil((Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()) + 86_400_000 - ms) / 1000));
}

/** A settle's reservation of fees, before anything is sent. */
export interface Reservation {
  day: string;
  amount: bigint;
  /** Nothing sent (`null`), or settled and charged `charged`: what the network did not charge comes back; a settled payment frees its hold on the newcomers' part. */
  release(charged: bigint | null): Promise<void>;
  /**
   * Sent, and the library reports it failed (`hash`). When the network has it as failed, the fee it charged stays counted
   * against the payer, the total, the service's and everyone's newcomers' parts, and the payer is not sponsored again
   * today; otherwise (not found yet: it may still land) the whole reservation stays counted.
   */
  failed(hash: string): Promise<void>;
}

export function createSponsorship(o: {
  ledger: Ledger;
  settings: X402Settings;
  passphrase: string;
  /** A fee account pays in a fee bump (the inclusion fee twice). */
  feeBump: boolean;
  now: () => number;
  chain: rpc.Server;
  refuse: Refuse;
}) {
  const s = o.settings;

  /** When `today` (ms) ends, as Retry-After. */
  const untilMidnight = (at: number) => ({ 'Retry-After': String(secondsToUtcMidnight(at)) });

  function newcomersSpent(at: number, bound: bigint, where: string): Error {
    return o.refuse(
      'farebox_new_payer_bound_reached',
      `${where} spent today's sponsored network fees for payers with no settled payment yet (${bound} stroops per UTC day, also spent by settles that failed on chain): a payer with a settled payment is still sponsored; try again after 00:00 UTC`,
      429,
      untilMidnight(at),
      'x402-new-payer-fees',
    );
  }

  return {
    /**
     * The payer's standing, read only (verify and settle): refused when one of its settles failed on chain today, or when
     * it has no settled payment and the newcomers' part is spent (for this service or everywhere). `established`: it has one.
     */
    async standing(payer: string, service: string): Promise<{ established: boolean }> {
      const at = o.now();
      const day = utcDay(at);
      const failed = await o.ledger.sponsoredFees(SPONSORED_KEYS.failed(payer), day);
      if (failed.settles > 0) {
        throw o.refuse(
          'farebox_payer_settle_failed',
          `payer ${payer} had ${failed.settles === 1 ? 'a settlement' : `${failed.settles} settlements`} fail on chain today (its USDC was gone when the transfer landed; ${failed.total} stroops of network fees spent for nothing): its payments are not sponsored again before 00:00 UTC`,
          429,
          untilMidnight(at),
          'x402-payer-failed',
        );
      }
      const established = await o.ledger.exactPayerSettled(payer);
      if (!established) {
        if ((await o.ledger.sponsoredFees(SPONSORED_KEYS.newPayersOf(service), day)).total >= s.serviceNewPayerDailyFeeStroops)
          throw newcomersSpent(at, s.serviceNewPayerDailyFeeStroops, service);
        if ((await o.ledger.sponsoredFees(SPONSORED_KEYS.newPayers, day)).total >= s.newPayerDailyFeeStroops)
          throw newcomersSpent(at, s.newPayerDailyFeeStroops, 'the facilitator');
      }
      return { established };
    },

    /**
     * Reserves the most the settlement may cost under the payer's bound, the newcomers' parts (the service's, then
     * everyone's: a payer with no settled payment only) and the total, each in one statement that never passes its bound.
     */
    async reserve(payer: string, service: string, transactionXdr: string, established: boolean): Promise<Reservation> {
      const fees = feesOf(transactionXdr, o.passphrase);
      const capped = fees ? (fees.fee < s.maxFeeStroops ? fees.fee : s.maxFeeStroops) : s.maxFeeStroops;
      // A fee bump pays the inclusion fee twice (inner and outer operation) plus the resource fee.
      const amount = o.feeBump ? capped * 2n + (fees?.resourceFee ?? 0n) : capped;
      const at = o.now();
      const day = utcDay(at);
      const held: string[] = [];
      const undo = async () => {
        for (const key of held) await o.ledger.releaseSponsoredFee(key, day, amount, { submitted: false });
      };
      const steps: Array<[string, bigint, () => Error]> = [
        [
          payer,
          s.payerDailyFeeStroops,
          () =>
            o.refuse(
              'farebox_fee_bound_reached',
              `payer ${payer} reached today's bound on sponsored network fees (${s.payerDailyFeeStroops} stroops per UTC day); try again after 00:00 UTC`,
              429,
              untilMidnight(at),
              'x402-payer-fees',
            ),
        ],
        ...(established
          ? []
          : ([
              [SPONSORED_KEYS.newPayersOf(service), s.serviceNewPayerDailyFeeStroops, () => newcomersSpent(at, s.serviceNewPayerDailyFeeStroops, service)],
              [SPONSORED_KEYS.newPayers, s.newPayerDailyFeeStroops, () => newcomersSpent(at, s.newPayerDailyFeeStroops, 'the facilitator')],
            ] as Array<[string, bigint, () => Error]>)),
        [
          '*',
          s.dailyFeeStroops,
          () =>
            o.refuse(
              'farebox_daily_fee_bound_reached',
              `the facilitator reached today's bound on sponsored network fees (${s.dailyFeeStroops} stroops per UTC day); try again after 00:00 UTC`,
              429,
              untilMidnight(at),
              'x402-daily-fees',
            ),
        ],
      ];
      for (const [key, bound, refusal] of steps) {
        if (!(await o.ledger.reserveSponsoredFee(key, day, amount, bound)).reserved) {
          await undo();
          throw refusal();
        }
        held.push(key);
      }
      const newcomerKeys = held.filter((k) => k.startsWith('new:'));
      const give = async (keys: string[], back: bigint, submitted: boolean) => {
        if (back > 0n) for (const key of keys) await o.ledger.releaseSponsoredFee(key, day, back, { submitted });
      };
      return {
        day,
        amount,
        async release(charged) {
          const back = charged === null ? amount : amount > charged ? amount - charged : 0n;
          await give([payer, '*'], back, charged !== null);
          // Not sent, or a payment that moved: nothing of it was spent for nothing.
          await give(newcomerKeys, amount, charged !== null);
        },
        async failed(hash) {
          const info = await o.chain.getTransaction(hash).catch(() => undefined);
          if (info?.status !== rpc.Api.GetTransactionStatus.FAILED) return;
          const charged = BigInt(info.resultXdr.feeCharged().toString());
          await give([payer, '*', ...newcomerKeys], amount > charged ? amount - charged : 0n, true);
          // A payer with a settled payment held nothing of the newcomers' parts: its failure is counted there now.
          if (established) {
            for (const key of [SPONSORED_KEYS.newPayersOf(service), SPONSORED_KEYS.newPayers]) await o.ledger.reserveSponsoredFee(key, day, charged, UNBOUNDED);
          }
          await o.ledger.reserveSponsoredFee(SPONSORED_KEYS.failed(payer), day, charged, UNBOUNDED);
        },
      };
    },
  };
}

export type Sponsorship = ReturnType<typeof createSponsorship>;
