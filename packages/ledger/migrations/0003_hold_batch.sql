-- @farebox/ledger, schema version 3: group commit of holds.
-- Places many key-less holds in one statement. Accounts are debited one at a
-- time in id order, so concurrent batches (also from other processes) lock
-- them in the same order and cannot deadlock. An account is debited only
-- when its credits cover all of its holds in the batch; otherwise none of
-- them is placed here and the caller decides each alone (exactly, in order).
-- Returns, per placed hold, its position in the input and the credits right
-- after it in input order.
CREATE FUNCTION farebox_hold_batch(
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
    SELECT gen_random_uuid() AS hold_id, i.*,
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
