/**
 * The gateway's clock: epoch milliseconds, `Date.now` unless the host (or a
 * test) passes another as `CreateGatewayOptions.now`. Every time the gateway
 * decides by reads it (tests/clock.test.ts keeps it so): call certificates
 * (issue time, expiry and whether one signed during a slow hold is still
 * fresh), the hold reaper, sessions, API-key use, OAuth codes and tokens,
 * spending days, rate-limit windows (in memory and on Redis), the credential,
 * manifest, webhook-subscription and search-backend caches, the settlement
 * interval, stalled cycles and dispute deadlines, readiness (catalog age, the
 * network's latest ledger), service health windows, how long a post or void
 * waits out a database outage and how long it is then asked again
 * (runtime/outage-retry.ts), how long a settlement waits for a lock or an
 * x402 channel account, and the age after which an interrupted wallet payment
 * is given up.
 *
 * Holds, idempotency keys' leases, the wallet set-up job and webhook
 * deliveries stay on the database's time, the one clock every gateway sharing
 * the database agrees on: the statement that places a hold or claims a key
 * stamps its expiry, and the reaper or the takeover compares with the
 * database's `now()`; the job's and the deliveries' leases and retries are
 * `now()` plus a delay. A clock that runs ahead of the machine's (a test's)
 * moves both sides by its lead ({@link leadOf}; `LedgerOptions.now`, the
 * job's `now`), so holds age, leases end and retries fall due with it. Rows
 * keep the database's time alone where it only records when something
 * happened (`created_at`, `revoked_at`, `resolved_at`), for the liveness
 * beats (a gateway is found dead by another's statement: a lead that differs
 * between gateways would find a live one dead) and for the UTC day of the
 * operators' revenue report.
 *
 * The machine's time stays where the clock would be wrong: a signed
 * transaction's time bounds are judged by the network, whose ledgers close on
 * the machine's time (settlement/onchain.ts, `canStillApplyTx`: a clock moved
 * ahead would build a second transaction while the first can still apply),
 * and a log line's timestamp (observability/log.ts) is the machine's, like
 * the other processes' logs it is read beside. Timers (`setTimeout`, the
 * pauses between attempts) wait the machine's time; what they decide compares
 * the clock, so a moved clock ends a wait at the next attempt. Durations
 * (a trace step's, a call's in the access log and metrics, a webhook attempt's)
 * are the machine's monotonic time (`performance.now()`): they decide nothing.
 */
export type Clock = () => number;

/** The machine's time. */
export const systemClock: Clock = () => Date.now();

/**
 * How far `now` runs ahead of the machine's time, in ms (0 for the machine's
 * clock, or none): what the database's `now()` is moved by where a row's
 * lease or due time is stamped and compared in SQL (the wallet set-up job,
 * webhook deliveries).
 */
export function leadOf(now: Clock | undefined): () => number {
  return now === undefined || now === systemClock ? () => 0 : () => now() - Date.now();
}
