-- @farebox/ledger, schema version 12: which processes on the database are alive, and whose holds and leases are whose.
-- Several gateways share one database. A gateway that dies (kill -9, a lost
-- host) leaves its calls' holds pending and its idempotency keys leased;
-- they came back only when each timed out (a hold after 2 x the call timeout
-- + 30 s, a lease after 60 s). From this version each process that places
-- holds joins `ledger_instances` and beats there every few seconds (by the
-- database's clock); each hold and each idempotency lease records the
-- instance that made it, in the statement that makes it. A process whose
-- beats stop is marked dead by a live one, which voids its pending holds
-- (the reaper's void: the money back to credits) and ends its leases, then
-- drops its row (Ledger.reapDeadInstances).
-- `alive_since` is when the instance's current unbroken run of beats began:
-- an instance declares others dead only once its own run is as long as the
-- timeout, so after an outage of the database nobody is declared dead for
-- beats nobody could write.
-- Rows and leases written before this version, or by a ledger that did not
-- join, have no instance: only their own timeouts return them.
CREATE TABLE ledger_instances (
  id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- host and process id, for operators
  name         TEXT NOT NULL,
  started_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
  alive_since  TIMESTAMPTZ NOT NULL DEFAULT now(),
  beat_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
  dead_at      TIMESTAMPTZ
);
-- No index on these columns: a call writes no more index entries than before;
-- a dead instance's holds are found among the pending ones (holds_pending_expiry),
-- its leases by one pass over the keys, once per death.
ALTER TABLE holds ADD COLUMN instance_id BIGINT;
ALTER TABLE idempotency_keys ADD COLUMN instance_id BIGINT;
-- The group commit of holds (migration 8's function) with the instance of the
-- batch. The five-argument version stays for processes of the previous
-- version still running during an upgrade (their holds have no instance).
CREATE FUNCTION farebox_hold_batch(
  p_account text[], p_amount bigint[], p_call text[], p_service text[], p_timeout_ms float8[], p_instance bigint
) RETURNS TABLE (o_ord bigint, o_id uuid, o_created_at timestamptz, o_expires_at timestamptz, o_balance bigint)
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  debited text[] := '{}';
  left_after bigint[] := '{}';
  after bigint;
BEGIN
  FOR r IN
    SELECT i.account_id, sum(i.amount)::bigint AS total
      FROM unnest(p_account, p_amount) AS i(account_id, amount)
     GROUP BY i.account_id ORDER BY i.account_id
  LOOP
    UPDATE accounts SET balance = balance - r.total WHERE id = r.account_id AND balance >= r.total RETURNING balance INTO after;
    IF FOUND THEN
      debited := debited || r.account_id;
      left_after := left_after || after;
    END IF;
  END LOOP;
  RETURN QUERY
  WITH input AS (
    SELECT * FROM unnest(p_account, p_amount, p_call, p_service, p_timeout_ms)
      WITH ORDINALITY AS i(account_id, amount, call_id, service, timeout_ms, ord)
  ), placed AS MATERIALIZED (
    SELECT farebox_uuid_v7() AS hold_id, i.*,
           (d.after + sum(i.amount) OVER (PARTITION BY i.account_id)
                    - sum(i.amount) OVER (PARTITION BY i.account_id ORDER BY i.ord))::bigint AS balance_after
      FROM input i JOIN unnest(debited, left_after) AS d(account_id, after) ON d.account_id = i.account_id
  ), h AS (
    INSERT INTO holds (id, account_id, amount, call_id, service, expires_at, instance_id)
    SELECT p.hold_id, p.account_id, p.amount, p.call_id, p.service, now() + make_interval(secs => p.timeout_ms / 1000), p_instance FROM placed p
    RETURNING holds.id, holds.created_at, holds.expires_at
  ), j AS (
    INSERT INTO journal (account_id, kind, amount, delta_balance, delta_held, hold_id)
    SELECT p.account_id, 'hold', p.amount, -p.amount, p.amount, p.hold_id FROM placed p
  )
  SELECT p.ord, h.id, h.created_at, h.expires_at, p.balance_after FROM placed p JOIN h ON h.id = p.hold_id;
END;
$$;
