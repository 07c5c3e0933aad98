import { FeeBumpTransaction, Horizon, TransactionBuilder, type Transaction } from '@stellar/stellar-sdk';
import type { Ledger, VerifyMismatch, WalletCredit } from '@farebox/ledger';
import { parseAmount } from '@farebox/protocol';
import type { NetworkConfig } from '@farebox/stellar';
import type { Db } from './db.js';
import { walletPaymentMemo } from './topups.js';

/** A wallet-backed credit the chain does not back as the ledger says. */
export interface WalletCreditProblem {
  txHash: string;
  accountId: string;
  paymentId: string;
  amount: bigint;
  problem: string;
  /** The credit itself (checked again on the next pass). */
  credit: WalletCredit;
}

export interface WalletAuditReport {
  /** Credits checked against the chain in this pass. */
  checked: number;
  /** Credits whose transaction does not back them (not found, failed, another payer, amount, destination or memo). */
  problems: WalletCreditProblem[];
  /** The ledger's own wallet-credit checks (a transaction backing two credits, a credit without its claim). */
  ledger: VerifyMismatch[];
  /** False when the network did not answer for some credits: they are checked again on the next pass. */
  complete: boolean;
}

export interface WalletAuditOptions {
  ledger: Ledger;
  db: Db;
  network: NetworkConfig;
  treasuryAddress: string;
}

/** Thrown inside a check when the network did not answer: the credit is neither good nor bad yet. */
class Unanswered extends Error {}

/**
 * Reconciles credits that wallet payments back with the chain: each one's
 * transaction exists and succeeded, was sent by that account's wallet, and
 * moved exactly that amount of USDC to the treasury, with the memo of its
 * payment record ({@link walletPaymentMemo}; credits written before the memo
 * was introduced have none). Together with the ledger's claim (a transaction
 * backs one credit at most), every such credit has one on-chain source.
 */
export function createWalletCreditAudit(o: WalletAuditOptions) {
  const horizon = new Horizon.Server(o.network.horizonUrl, { allowHttp: o.network.allowHttp });
  const usdc = o.network.usdc;

  async function wallets(accountIds: string[]): Promise<Map<string, string>> {
    if (accountIds.length === 0) return new Map();
    const { rows } = await o.db.query<{ id: string; wallet_address: string }>('SELECT id, wallet_address FROM gw_users WHERE id = ANY($1::text[])', [
      accountIds,
    ]);
    return new Map(rows.map((r) => [r.id, r.wallet_address]));
  }

  /** What is wrong with one credit, or null when its transaction backs it. */
  async function check(c: WalletCredit, wallet: string | undefined): Promise<string | null> {
    let record: Horizon.ServerApi.TransactionRecord;
    try {
      record = await horizon.transactions().transaction(c.txHash).call();
    } catch (err) {
      const status = (err as { response?: { status?: number } })?.response?.status;
      if (status === 404) return 'transaction not found on chain';
      throw new Unanswered(err instanceof Error ? err.message : String(err));
    }
    if (!record.successful) return 'transaction failed on chain';
    if (!wallet) return `account ${c.accountId} has no wallet`;
    let tx: Transaction;
    try {
      const parsed = TransactionBuilder.fromXDR(record.envelope_xdr, o.network.passphrase);
      tx = parsed instanceof FeeBumpTransaction ? parsed.innerTransaction : parsed;
    } catch {
      return 'transaction envelope unreadable';
    }
    if (tx.source !== wallet) return `sent by ${tx.source}, not by the account's wallet ${wallet}`;
    const op = tx.operations[0];
    if (tx.operations.length !== 1 || !op || op.type !== 'payment') return 'not a single payment';
    if (op.source !== undefined && op.source !== wallet) return `payment from ${op.source}, not from the account's wallet ${wallet}`;
    if (op.destination !== o.treasuryAddress) return `paid ${op.destination}, not the treasury`;
    if (op.asset.isNative() || op.asset.getCode() !== usdc.code || op.asset.getIssuer() !== usdc.issuer)
      return `paid ${op.asset.isNative() ? 'XLM' : `${op.asset.getCode()}:${op.asset.getIssuer()}`}, not USDC`;
    const paid = parseAmount(op.amount);
    if (paid !== c.amount) return `moved ${paid} base units, credited ${c.amount}`;
    if (tx.memo.type === 'hash') {
      const memo = Buffer.from(tx.memo.value as Buffer);
      if (!memo.equals(walletPaymentMemo(c.paymentId))) return `memo names another payment than ${c.paymentId}`;
    } else if (tx.memo.type !== 'none') {
      return `memo of type ${tx.memo.type}, not the payment's`;
    }
    return null;
  }

  /** Checks `credits` against the chain, a few at a time. */
  async function checkAll(credits: WalletCredit[]): Promise<{ problems: WalletCreditProblem[]; checked: WalletCredit[]; unanswered: WalletCredit[] }> {
    const owners = await wallets([...new Set(credits.map((c) => c.accountId))]);
    const problems: WalletCreditProblem[] = [];
    const checked: WalletCredit[] = [];
    const unanswered: WalletCredit[] = [];
    for (let i = 0; i < credits.length; i += 8) {
      await Promise.all(
        credits.slice(i, i + 8).map(async (c) => {
          try {
            const problem = await check(c, owners.get(c.accountId));
            checked.push(c);
            if (problem) problems.push({ txHash: c.txHash, accountId: c.accountId, paymentId: c.paymentId, amount: c.amount, problem, credit: c });
          } catch (err) {
            if (!(err instanceof Unanswered)) throw err;
            unanswered.push(c);
          }
        }),
      );
    }
    return { problems, checked, unanswered };
  }

  // The periodic pass: credits are immutable, so each is checked once; problems and unanswered ones again each pass.
  let cursor = 0n;
  const open = new Map<string, WalletCreditProblem>();
  const retry = new Map<string, WalletCredit>();
  let lastLedger: VerifyMismatch[] = [];

  return {
    /** Every wallet-backed credit against the chain, and the ledger's wallet-credit checks (an operator's full audit). */
    async audit(): Promise<WalletAuditReport> {
      const report: WalletAuditReport = { checked: 0, problems: [], ledger: await o.ledger.verifyWalletCredits(), complete: true };
      for (let after = 0n; ; ) {
        const page = await o.ledger.walletCredits({ after, limit: 500 });
        const r = await checkAll(page);
        report.checked += r.checked.length;
        report.problems.push(...r.problems);
        if (r.unanswered.length) report.complete = false;
        if (page.length < 500) break;
        after = page[page.length - 1]!.seq;
      }
      return report;
    },

    /**
     * One pass of the periodic job: the credits written since the last pass
     * (at most `limit`), the ones the network did not answer for and the open
     * problems again, and the ledger's checks. `problems` is every problem
     * still open.
     */
    async pass(limit = 200): Promise<WalletAuditReport> {
      const fresh = await o.ledger.walletCredits({ after: cursor, limit });
      const again = [...retry.values(), ...[...open.values()].map((p) => p.credit)];
      const r = await checkAll([...again, ...fresh]);
      for (const c of r.checked) {
        retry.delete(c.txHash);
        open.delete(c.txHash);
      }
      for (const p of r.problems) open.set(p.txHash, p);
      for (const c of r.unanswered) retry.set(c.txHash, c);
      const last = fresh[fresh.length - 1];
      if (last) cursor = last.seq;
      lastLedger = await o.ledger.verifyWalletCredits();
      return { checked: r.checked.length, problems: [...open.values()], ledger: lastLedger, complete: r.unanswered.length === 0 };
    },

    /** Open problems after the last pass: chain problems plus the ledger's wallet-credit mismatches (the `/metrics` gauge). */
    openProblems(): number {
      return open.size + lastLedger.length;
    },
  };
}

export type WalletCreditAudit = ReturnType<typeof createWalletCreditAudit>;
