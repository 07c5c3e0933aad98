import type { Database } from '@farebox/ledger';
import type { Clock } from '../clock.js';
import { GatewayError } from '../errors.js';
import { createCycleLocks } from '../settlement/lock.js';

/** How long a treasury transaction waits for its turn before it gives up (another gateway's turn outlasting this is stuck). */
const TREASURY_WAIT_MS = 120_000;

/**
 * The one queue of treasury-sourced transactions. Every transaction whose
 * source is the treasury (settlement's deploy, funds, complete, approve,
 * release and sweep, the operator's and the wallet path's disputes and
 * refunds, accounts the treasury creates, its trustline, the x402 channel
 * accounts' funding) takes the treasury's next sequence number, so they go
 * one at a time: in process through one mutex, across gateways sharing a
 * PostgreSQL database through one advisory lock (`farebox:<schema>:treasury`,
 * held on its own pooled session while the transaction is built, signed,
 * submitted and included; it dies with the session if the process does).
 */
export interface TreasuryQueue {
  /** Runs `fn` (one treasury transaction: build, sign, submit, wait for its ledger) in the treasury's turn; `what` names it in errors. */
  run<T>(what: string, fn: () => Promise<T>): Promise<T>;
}

/** The gateway's {@link TreasuryQueue} over its database (PGlite: one process, the in-process mutex alone). */
export function createTreasuryQueue(db: Database, opts: { waitMs?: number; now?: Clock } = {}): TreasuryQueue {
  const locks = createCycleLocks(db, opts.now);
  const waitMs = opts.waitMs ?? TREASURY_WAIT_MS;
  return {
    async run(what, fn) {
      const r = await locks.withLock('treasury', fn, { waitMs });
      if (!r.ran)
        throw new GatewayError(
          'UNAVAILABLE',
          `${what}: the treasury's turn did not come within ${waitMs / 1000} s (another gateway holds it); try again later`,
        );
      return r.value;
    },
  };
}
