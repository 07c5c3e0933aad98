/**
 * The ledger's clock: the host's (`LedgerOptions.now`, epoch ms), the
 * machine's by default. The ledger's rows are stamped by the database's time
 * (`now()`), the one clock every process on the database agrees on; where
 * the host's clock decides with it (a hold's expiry and the reaper, an
 * idempotency key's lease and its takeover), the database's time is moved by
 * how far the host's clock runs ahead of the machine's ({@link leadOf}), so a
 * clock a test moves ages holds and leases with it. What the ledger waits in
 * this process (a duplicate's `waitMs`, how long an unwritten outcome is
 * asked again) is measured by the host's clock; the pauses between attempts
 * are the machine's timers.
 */
export type Clock = () => number;

/** The machine's time. */
export const systemClock: Clock = () => Date.now();

/** How far `now` runs ahead of the machine's time, in ms (0 for the machine's clock, or none). */
export function leadOf(now: Clock | undefined): () => number {
  return now === undefined || now === systemClock ? () => 0 : () => now() - Date.now();
}
