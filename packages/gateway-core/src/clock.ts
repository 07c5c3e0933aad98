/**
 * The gateway's clock: epoch milliseconds, `Date.now` unless the host (or a
 * test) passes another as `CreateGatewayOptions.now`. What the gateway
 * decides by the time reads it: call certificates (issue time, expiry and
 * whether one signed during a slow hold is still fresh), the hold reaper,
 * sessions, API-key use, OAuth codes and tokens, spending days, the
 * settlement interval, readiness (catalog age, the network's latest ledger),
 * the manifest cache and the age after which an interrupted wallet payment
 * is given up.
 *
 * Holds and the wallet set-up job stay on the database's time, the one clock
 * every gateway sharing the database agrees on: the statement that places a
 * hold stamps its expiry and the reaper compares with the database's
 * `now()`, and the job's leases and retries are `now()` plus a delay. A clock
 * that runs ahead of the machine's (a test's) moves both sides by its lead
 * (`LedgerOptions.now`, the job's `now`), so holds age and retries fall due
 * with it. Rows keep the database's time alone where it only records when
 * something happened (`created_at`, `revoked_at`, `resolved_at`), and for
 * idempotency keys' leases and the UTC day of the operators' revenue report.
 */
export type Clock = () => number;

/** The machine's time. */
export const systemClock: Clock = () => Date.now();
