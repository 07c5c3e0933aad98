import type { Ledger, PaymentChannel } from '@farebox/ledger';
import type { ChannelCall, ChannelState } from '@farebox/stellar';
import { systemClock } from '../clock.js';
import type { TreasuryQueue } from '../runtime/treasury-queue.js';

// The channel watcher: the treasury collects what channel calls earned. The
// money of a paid voucher is still in the agent's channel contract; it is the
// treasury's once a settle or close transaction withdraws it, and only then
// are the channel's earnings claimed by settlement cycles (ledger, schema 19).
// The funder can take everything back after close_start and its waiting
// period: a close started on chain is answered with `close` at once.

export interface ChannelWatcherOptions {
  ledger: Ledger;
  /** Reads a channel from the chain. */
  readChannel: (channel: string) => Promise<ChannelState>;
  /** Sends one channel call signed by the treasury (the recipient). */
  invoke: (channel: string, call: ChannelCall) => Promise<{ txHash: string }>;
  treasuryQueue: TreasuryQueue;
  /** A channel with no paid call for this long is closed (its rest goes back to the funder). */
  idleCloseMs: number;
  /** An open channel is settled (kept open) once this much is paid and not withdrawn. */
  settleMin: bigint;
  now?: () => number;
  log?: (message: string, err?: unknown) => void;
}

/** What one tick did to one channel. */
export interface ChannelAction {
  channel: string;
  action: 'settle' | 'close' | 'wait';
  reason: string;
  amount?: bigint;
  txHash?: string;
}

/** A channel's fixed terms, as the ledger keeps them. */
function terms(row: PaymentChannel) {
  const { channel, network, token, funder, recipient, commitmentKey, refundWaitingPeriod } = row;
  return { channel, network, token, funder, recipient, commitmentKey, refundWaitingPeriod };
}

export function createChannelWatcher(o: ChannelWatcherOptions) {
  const now = o.now ?? systemClock;
  const log = o.log ?? (() => undefined);

  async function visit(channel: string): Promise<ChannelAction> {
    const state = await o.readChannel(channel);
    let row = await o.ledger.channels.get(channel);
    if (!row) return { channel, action: 'wait', reason: 'unknown to the ledger' };
    if (state.closeEffectiveAtLedger !== null && row.state === 'open') {
      // The funder started closing: no voucher is accepted from now on.
      ({ channel: row } = await o.ledger.channels.upsert({
        ...terms(row),
        deposited: state.deposited,
        closeEffectiveLedger: state.closeEffectiveAtLedger,
        state: 'closing',
      }));
    }
    if (row.paid <= row.withdrawn || !row.paidSignature) {
      // Everything paid is withdrawn: once the funder's close is effective the channel is closed here too, and no longer due.
      if (row.state === 'closing' && state.closeEffectiveAtLedger !== null && state.closeEffectiveAtLedger <= state.latestLedger)
        await o.ledger.channels.upsert({ ...terms(row), deposited: state.deposited, closeEffectiveLedger: state.closeEffectiveAtLedger, state: 'closed' });
      return { channel, action: 'wait', reason: 'nothing to withdraw' };
    }
    const closing = state.closeEffectiveAtLedger !== null;
    const idle = row.paidAt !== null && now() - row.paidAt.getTime() >= o.idleCloseMs;
    let fn: 'settle' | 'close' | undefined;
    let reason = '';
    if (closing) [fn, reason] = ['close', `the funder started closing (effective at ledger ${state.closeEffectiveAtLedger})`];
    else if (idle) [fn, reason] = ['close', `no paid call for ${Math.round((now() - row.paidAt!.getTime()) / 1000)} s`];
    else if (row.paid - row.withdrawn >= o.settleMin) [fn, reason] = ['settle', `${row.paid - row.withdrawn} paid and not withdrawn`];
    if (!fn) return { channel, action: 'wait', reason: 'below the settle threshold' };
    // A call in flight may still be paid: close after it, so the close withdraws it too.
    if (fn === 'close' && row.pending && row.pending.until.getTime() > now()) return { channel, action: 'wait', reason: 'a call is in flight' };
    const amount = row.paid;
    const signature = Uint8Array.from(Buffer.from(row.paidSignature, 'hex'));
    const { txHash } = await o.treasuryQueue.run(`channel ${fn}`, () => o.invoke(channel, { fn: fn!, amount, signature }));
    // A retry after a crash between the transaction and this record withdraws nothing more on chain and records the same amount.
    const recorded = await o.ledger.channels.recordWithdrawal({ txHash, channel, amount, kind: fn });
    if ('refused' in recorded) log(`channel ${channel}: the ${fn} of ${amount} was not recorded (${recorded.refused})`);
    return { channel, action: fn, reason, amount, txHash };
  }

  return {
    /** One pass over the channels the ledger says are due; a channel that fails is logged and tried at the next tick. */
    async tick(): Promise<ChannelAction[]> {
      const actions: ChannelAction[] = [];
      let after: string | undefined;
      for (;;) {
        const due = await o.ledger.channels.due({ ...(after ? { after } : {}), limit: 200 });
        for (const d of due) {
          try {
            actions.push(await visit(d.channel));
          } catch (err) {
            log(`channel ${d.channel}: settling failed (tried again next tick)`, err);
          }
        }
        if (due.length < 200) return actions;
        after = due[due.length - 1]!.channel;
      }
    },
  };
}

export type ChannelWatcher = ReturnType<typeof createChannelWatcher>;
