-- @farebox/ledger, schema version 18: the earning of a settle-first `exact` payment is held back from settlement
-- batches for its refund window.
--
-- A service that settles before its handler runs (`@farebox/provider`'s `exact: { settle: 'before-handler' }`,
-- whose offer carries `extra.refundable: true`, bound by the facilitator's field-by-field check of `accepted`) may
-- have the payment refunded when the handler fails (schema 17). A refund is refused once a cycle claimed the earning,
-- and a funding tick runs every 10 s: a slow handler failing after a tick would leave its payer charged. Such an
-- earning is recorded with `hold_until` (its settlement plus the refund window, the window the refund accepts): no
-- claim takes it before then, so a refund within the window always finds it unclaimed; after it, the next batch pays
-- it like any other. Other earnings have no hold and keep their timing.
ALTER TABLE earnings ADD COLUMN hold_until TIMESTAMPTZ;
-- Only an exact payment's earning is held.
ALTER TABLE earnings ADD CONSTRAINT earning_hold CHECK (hold_until IS NULL OR exact_tx_hash IS NOT NULL);

-- The intent carries the hold, so a payment the reconciler records from the chain is held as the facilitator's record would be.
ALTER TABLE exact_intents ADD COLUMN hold_ms INTEGER CHECK (hold_ms IS NULL OR hold_ms > 0);

-- The database enforces the hold: it is fixed when the earning is recorded, and a held earning is assigned to no cycle
-- before it ends (the claim's own filter skips it; this refuses any other statement).
CREATE FUNCTION farebox_earning_hold_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.hold_until IS DISTINCT FROM OLD.hold_until THEN
    RAISE EXCEPTION 'earnings: a hold is fixed when the earning is recorded' USING ERRCODE = 'FB001';
  END IF;
  RAISE EXCEPTION 'earnings: a held earning is claimed by no cycle before %', OLD.hold_until USING ERRCODE = 'FB001';
END;
$$;
CREATE TRIGGER earnings_hold_guard BEFORE UPDATE ON earnings
  FOR EACH ROW WHEN (
    NEW.hold_until IS DISTINCT FROM OLD.hold_until
    OR (OLD.cycle_id IS NULL AND NEW.cycle_id IS NOT NULL AND OLD.hold_until IS NOT NULL AND OLD.hold_until > now())
  ) EXECUTE FUNCTION farebox_earning_hold_guard();
