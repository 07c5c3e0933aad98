import type { Database } from '@farebox/ledger';
import type { Accounts, NetworkConfig, TxSigner } from '@farebox/stellar';
import { walletSigner, type WalletProvider } from '@farebox/wallets';
import type { TreasuryQueue } from '../runtime/treasury-queue.js';
import { systemClock, type Clock } from '../clock.js';
import { advisoryKeys } from '../settlement/lock.js';
import { FairSlots, SlotTimeout } from './fair-queue.js';

/** A channel account is looked at again (and topped up when low) at most this often while it is used. */
const RECHECK_MS = 60_000;
/** How often a settle holding a slot asks again for a channel another gateway holds. */
const RETRY_LOCK_MS = 50;

/** The dedicated session holding this gateway's channel locks (a pooled client kept for them). */
interface LockSession {
  query<R>(text: string, params: unknown[]): Promise<{ rows: R[] }>;
  on(event: 'error', listener: (err: Error) => void): unknown;
  release(destroy?: boolean): void;
}

/** No channel account came free before the settle's deadline: nothing was sent for it. */
export class ChannelsBusy extends Error {}

/** No channel account could be set up (created, funded): nothing was sent. */
export class ChannelsUnavailable extends Error {}

export interface ChannelPoolOptions {
  db: Database;
  wallets: WalletProvider;
  chain: Pick<Accounts, 'balances' | 'fund' | 'createAccount' | 'payXlm'>;
  network: NetworkConfig;
  /** Creates the channel accounts where there is no friendbot, and tops them up. */
  treasury: TxSigner;
  treasuryQueue: TreasuryQueue;
  /** How many channel accounts (`FAREBOX_X402_CHANNELS`): the most settlements in flight per gateway. */
  count: number;
  /** XLM (stroops) a channel account is created or topped up to (`FAREBOX_X402_CHANNEL_STROOPS`); topped up below half of it. */
  balanceStroops: bigint;
  /** The most settlements of one payer in flight at once (`FAREBOX_X402_PAYER_CONCURRENCY`). */
  perPayer: number;
  log(message: string, err?: unknown): void;
  /** The gateway's clock (default the machine's): a lease's deadline and when a channel is looked at again. */
  now?: Clock;
}

/** One channel account lent to one settlement. */
export interface ChannelLease {
  readonly address: string;
  /** Gives it back; `recheck` when its transaction was refused at submission (its XLM or its sequence number is looked at before it serves again). */
  release(opts?: { recheck?: boolean }): void;
}

interface Channel {
  address: string;
  signer: TxSigner;
  leased: boolean;
  /** Known to exist and to hold XLM for fees. */
  ready: boolean;
  checkedAt: number;
  checking: Promise<void> | undefined;
}

/**
 * The x402 facilitator's channel accounts: each `exact` settlement is a
 * transaction whose source (sequence number, fee) is a channel account of its
 * own, never the treasury, so settlements run in parallel, one per channel,
 * and never take the treasury's sequence number from settlement or the
 * operator's tools. The keys live in the gateway's keystore
 * (`platform:x402-channel:<i>`, shared by the gateways on one database); a
 * channel is lent to one settlement at a time, in process by this pool and
 * across gateways on PostgreSQL by an advisory lock per channel, held on one
 * dedicated session (it dies with the process). Settlements get channels
 * through {@link FairSlots}: at most `perPayer` per payer, payers served in
 * turn. The channels are created (friendbot where there is one, else by the
 * treasury, in the treasury's queue) and topped up from the treasury when
 * their XLM falls below half of `balanceStroops`.
 */
export async function createChannelPool(o: ChannelPoolOptions) {
  const addresses = await Promise.all(Array.from({ length: o.count }, (_, i) => o.wallets.create(`platform:x402-channel:${i}`)));
  const channels: Channel[] = addresses.map((address) => ({
    address,
    signer: walletSigner(o.wallets, address),
    leased: false,
    ready: false,
    checkedAt: 0,
    checking: undefined,
  }));
  const slots = new FairSlots(o.count, o.perPayer);
  const now = o.now ?? systemClock;
  let prepared: Promise<void> | undefined;
  let session: Promise<LockSession> | undefined;
  let sessionTurn: Promise<unknown> = Promise.resolve();
  let closed = false;

  /** Creates the account or tops it up to `balanceStroops` when it holds less than half; once at a time per channel. */
  function check(c: Channel): Promise<void> {
    c.checking ??= (async () => {
      try {
        const b = await o.chain.balances(c.address);
        if (!b.exists) {
          if (o.network.friendbotUrl) await o.chain.fund(c.address);
          else await o.treasuryQueue.run(`creating x402 channel account ${c.address}`, () => o.chain.createAccount(o.treasury, c.address, o.balanceStroops));
        } else if (b.xlm < o.balanceStroops / 2n) {
          await o.treasuryQueue.run(`topping up x402 channel account ${c.address}`, () => o.chain.payXlm(o.treasury, c.address, o.balanceStroops - b.xlm));
        }
        c.ready = true;
      } catch (err) {
        o.log(`x402 channel account ${c.address} could not be set up or topped up (the treasury pays its XLM: fund it); it is left out until it is`, err);
      } finally {
        c.checkedAt = now();
        c.checking = undefined;
      }
    })();
    return c.checking;
  }

  /** Every channel set up (memoised while it succeeds for one at least). */
  function prepare(): Promise<void> {
    prepared ??= Promise.all(channels.map(check)).then(() => {
      if (!channels.some((c) => c.ready)) {
        prepared = undefined;
        throw new ChannelsUnavailable('no x402 channel account could be set up: the treasury creates and funds them with XLM; fund it');
      }
    });
    return prepared;
  }

  async function sessionClient(): Promise<LockSession> {
    session ??= o.db.pool.connect().then((client): LockSession => {
      // A lost session loses its locks: the next lease opens another.
      client.on('error', dropSession);
      return client;
    });
    return session;
  }

  /** Gives the session's connection up (destroyed: its locks go with it). */
  function dropSession(): void {
    const dropped = session;
    session = undefined;
    void dropped?.then(
      (client) => {
        try {
          client.release(true);
        } catch {
          // Released already.
        }
      },
      () => undefined,
    );
  }

  /** One statement at a time on the session (a pg client runs one query at a time). */
  function onSession<T>(fn: (client: LockSession) => Promise<T>): Promise<T> {
    const run = sessionTurn.then(async () => fn(await sessionClient()));
    sessionTurn = run.catch(() => undefined);
    return run;
  }

  async function lockElsewhere(c: Channel): Promise<boolean> {
    if (o.db.kind !== 'postgres') return true;
    const [a, b] = advisoryKeys(o.db, `x402-channel:${c.address}`);
    try {
      const { rows } = await onSession((client) => client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [a, b]));
      return rows[0]?.ok === true;
    } catch (err) {
      dropSession();
      throw err;
    }
  }

  async function unlockElsewhere(c: Channel): Promise<void> {
    if (o.db.kind !== 'postgres' || !session) return;
    const [a, b] = advisoryKeys(o.db, `x402-channel:${c.address}`);
    await onSession((client) => client.query('SELECT pg_advisory_unlock($1, $2)', [a, b])).catch((err) => {
      dropSession();
      o.log(`x402 channel account ${c.address}: its lock was not released (the session is dropped, its locks with it)`, err);
    });
  }

  /** A ready channel nobody uses, here or on another gateway; polls until `deadline`. */
  async function take(deadline: number): Promise<Channel> {
    for (;;) {
      for (const c of channels) {
        if (!c.ready) {
          // One that could not be set up is tried again now and then.
          if (!c.checking && now() - c.checkedAt > RECHECK_MS) void check(c);
          continue;
        }
        if (c.leased) continue;
        c.leased = true;
        let mine = false;
        try {
          mine = await lockElsewhere(c);
        } finally {
          if (!mine) c.leased = false;
        }
        if (mine) return c;
      }
      if (now() >= deadline) throw new ChannelsBusy('every x402 channel account is in use (by other gateways too)');
      await new Promise((r) => setTimeout(r, RETRY_LOCK_MS));
    }
  }

  return {
    /** The channel accounts' addresses (the facilitator's signers). */
    addresses,
    /** Signs as channel `address` (the facilitator hands it to `@x402/stellar`). */
    signer(address: string): TxSigner {
      const c = channels.find((x) => x.address === address);
      if (!c) throw new Error(`${address} is not an x402 channel account`);
      return c.signer;
    },
    prepare,
    /**
     * A channel account for one settlement of `payer`, waiting at most
     * `waitMs` for its turn: {@link ChannelsBusy} after that,
     * {@link ChannelsUnavailable} when none can be set up; nothing is sent
     * in either case.
     */
    async lease(payer: string, waitMs: number): Promise<ChannelLease> {
      if (closed) throw new ChannelsUnavailable('the gateway is closing');
      const deadline = now() + waitMs;
      await prepare();
      let freeSlot: () => void;
      try {
        freeSlot = await slots.acquire(payer, deadline - now());
      } catch (err) {
        if (err instanceof SlotTimeout) throw new ChannelsBusy(`no x402 channel account came free within ${Math.round(waitMs / 1000)} s`);
        throw err;
      }
      let c: Channel;
      try {
        c = await take(deadline);
      } catch (err) {
        freeSlot();
        throw err;
      }
      let done = false;
      return {
        address: c.address,
        release(opts = {}) {
          if (done) return;
          done = true;
          if (opts.recheck) c.ready = false;
          void unlockElsewhere(c).finally(() => {
            c.leased = false;
            freeSlot();
          });
          if (opts.recheck || now() - c.checkedAt > RECHECK_MS) void check(c);
        },
      };
    },
    /** Settlements holding a channel and waiting for one (all, or one payer's). */
    stats: (payer?: string) => slots.stats(payer),
    /** Drops the lock session (its locks with it). */
    async close(): Promise<void> {
      closed = true;
      const open = session;
      dropSession();
      await open?.catch(() => undefined);
    },
  };
}

export type ChannelPool = Awaited<ReturnType<typeof createChannelPool>>;
