-- @farebox/ledger, schema version 8: time-ordered hold ids.
-- A hold's id goes into an index five times per call: the holds' primary key
-- at its insert and again at its post (not a HOT update), the earnings'
-- `hold_id` and the journal's `(hold_id, kind)` for its two rows. Random (version 4)
-- ids put each of those insertions on a random leaf page: every page of
-- these indexes is written over and over, and each first write after a
-- checkpoint puts the whole page in the WAL. In PostgreSQL 15 alone,
-- 200,000 rows in statements of ten into a table of 500,000 with two
-- indexes: 1,399 ms and 64 MB of WAL with random keys, 1,032 ms and 48 MB
-- with time-ordered ones. New holds get UUIDv7 ids (RFC 9562: the Unix time
-- in milliseconds, then random bits), made from gen_random_uuid() with its
-- first six bytes replaced by the time and its version set to 7, so ids of
-- the same millisecond are in random order among themselves. Ids already
-- given stay as they are; an id is still only an id (no code reads the time
-- from it).
CREATE FUNCTION farebox_uuid_v7() RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
  SELECT encode(
    set_bit(set_bit(
      overlay(uuid_send(gen_random_uuid())
              placing substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
              FROM 1 FOR 6),
      52, 1), 53, 1),
    'hex')::uuid
$$;
ALTER TABLE holds ALTER COLUMN id SET DEFAULT farebox_uuid_v7();
-- Migration 0003's function, unchanged but for the id of each placed hold.
CREATE OR REPLACE FUNCTION farebox_hold_batch(
  p_account text[], p_amount bigint[], p_call text[], p_service text[], p_timeout_ms float8[]
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
    INSERT INTO holds (id, account_id, amount, call_id, service, expires_at)
    SELECT p.hold_id, p.account_id, p.amount, p.call_id, p.service, now() + make_interval(secs => p.timeout_ms / 1000) FROM placed p
    RETURNING holds.id, holds.created_at, holds.expires_at
  ), j AS (
    INSERT INTO journal (account_id, kind, amount, delta_balance, delta_held, hold_id)
    SELECT p.account_id, 'hold', p.amount, -p.amount, p.amount, p.hold_id FROM placed p
  )
  SELECT p.ord, h.id, h.created_at, h.expires_at, p.balance_after FROM placed p JOIN h ON h.id = p.hold_id;
END;
$$;
