import type { Accounts as ChainAccounts, NetworkConfig, TxSigner } from '@farebox/stellar';
import { walletSigner, type WalletProvider } from '@farebox/wallets';
import type { Db } from './db.js';
import type { TreasuryQueue } from './runtime/treasury-queue.js';
import { leadOf } from './clock.js';

export interface WalletProvisioningOptions {
  db: Db;
  chain: ChainAccounts;
  network: NetworkConfig;
  wallets: WalletProvider;
  /** Pays for new accounts where the network has no friendbot (mainnet). */
  treasury: TxSigner;
  /** The gateway's one queue of treasury transactions (the accounts it creates, its own trustline). */
  treasuryQueue: TreasuryQueue;
  /** XLM (stroops) a new wallet starts with where the treasury creates it: its reserves (account and USDC trustline) and fees. */
  startingXlm: bigint;
  /** How often due jobs are looked for (default 2 s); a sign-up also wakes the worker at once. */
  intervalMs?: number;
  log?(message: string, err?: unknown): void;
  /**
   * The gateway's clock. Jobs' leases and retry times are the database's (every
   * gateway on it shares the queue), moved by how far this clock runs ahead of
   * the machine's, as holds are: a test's clock makes a retry due.
   */
  now?: () => number;
}

/** How long one attempt owns a job before another gateway may retry it (a crash mid-way). */
const LEASE_S = 60;
/** Retry after a failure: 2, 4, 8 ... seconds, at most 5 minutes. */
const backoffSeconds = (attempts: number) => Math.min(300, 2 ** Math.min(attempts, 9));

/**
 * Sets up new accounts' wallets on chain (account created, USDC trustline)
 * so that the address an answer shows can receive USDC. The job is durable:
 * it is the account row itself (`wallet_ready_at` is null until it is done),
 * claimed with a lease by whichever gateway gets to it first, retried with
 * backoff after a failure and resumed after a restart. Each step is
 * idempotent (an existing account or trustline is left as it is).
 */
export function createWalletProvisioning(o: WalletProvisioningOptions) {
  const log = o.log ?? (() => undefined);
  const ahead = leadOf(o.now);
  /** Seconds the gateway's clock runs ahead of the machine's (0 with the default clock). */
  const lead = () => ahead() / 1000;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  const inflight = new Map<string, Promise<void>>();

  /** Creates and funds the account (friendbot, or the treasury) and sets its USDC trustline. */
  async function setUp(address: string): Promise<void> {
    const state = await o.chain.balances(address);
    if (!state.exists) {
      if (o.network.friendbotUrl) await o.chain.fund(address);
      else
        await o.treasuryQueue
          .run(`creating wallet ${address}`, () => o.chain.createAccount(o.treasury, address, o.startingXlm))
          .catch((err: unknown) => {
            throw new Error(
              `the treasury ${o.treasury.publicKey} could not create the wallet (it pays each new wallet's XLM reserve: fund it with XLM): ${err instanceof Error ? err.message : String(err)}`,
              { cause: err },
            );
          });
    }
    if (state.usdc === null) {
      const trustline = () => o.chain.ensureUsdcTrustline(walletSigner(o.wallets, address));
      // The treasury's own trustline is a treasury transaction: in its turn.
      await (address === o.treasury.publicKey ? o.treasuryQueue.run('the treasury’s USDC trustline', trustline) : trustline());
    }
  }

  /** Sets up one address now (once at a time per address); marks the account ready when given. */
  function ensure(address: string, userId?: string): Promise<void> {
    let p = inflight.get(address);
    if (!p) {
      p = (async () => {
        await setUp(address);
        if (userId) await o.db.query('UPDATE gw_users SET wallet_ready_at = now(), wallet_error = NULL WHERE id = $1 AND wallet_ready_at IS NULL', [userId]);
      })().finally(() => inflight.delete(address));
      inflight.set(address, p);
    }
    return p;
  }

  /** Claims due jobs (leased, so two gateways never work on the same one) and runs them. */
  async function pass(): Promise<void> {
    for (;;) {
      const { rows } = await o.db.query<{ id: string; wallet_address: string; wallet_attempts: number }>(
        `UPDATE gw_users SET wallet_attempts = wallet_attempts + 1, wallet_next_attempt_at = now() + make_interval(secs => $1::float8 + $2::float8)
          WHERE id IN (SELECT id FROM gw_users WHERE wallet_ready_at IS NULL AND wallet_next_attempt_at <= now() + make_interval(secs => $2::float8)
                       ORDER BY wallet_next_attempt_at LIMIT 8 FOR UPDATE SKIP LOCKED)
          RETURNING id, wallet_address, wallet_attempts`,
        [LEASE_S, lead()],
      );
      if (rows.length === 0 || stopped) return;
      await Promise.all(
        rows.map(async (r) => {
          try {
            await ensure(r.wallet_address, r.id);
          } catch (err) {
            const message = err instanceof Error ? err.message : String(err);
            log(`setting up wallet ${r.wallet_address} failed (attempt ${r.wallet_attempts}; retried)`, err);
            await o.db
              .query(
                'UPDATE gw_users SET wallet_next_attempt_at = now() + make_interval(secs => $2::float8), wallet_error = $3 WHERE id = $1 AND wallet_ready_at IS NULL',
                [r.id, backoffSeconds(r.wallet_attempts) + lead(), message.slice(0, 1000)],
              )
              .catch(() => undefined);
          }
        }),
      );
    }
  }

  /** Runs a pass now, or right after the current one. */
  function kick(): void {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = pass()
      .catch((err) => log('wallet provisioning pass failed (retried)', err))
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          kick();
        }
      });
  }

  return {
    ensure,
    kick,
    start() {
      stopped = false;
      kick();
      timer ??= setInterval(kick, o.intervalMs ?? 2_000);
      timer.unref();
    },
    /** Stops looking for jobs and waits for the attempt in progress. */
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      timer = undefined;
      await running;
      await Promise.allSettled([...inflight.values()]);
    },
  };
}

export type WalletProvisioning = ReturnType<typeof createWalletProvisioning>;
